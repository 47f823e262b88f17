/** Reviewable-learning proposals (`/v1/proposals`) through the generated client. */
import { api, call, Schemas } from './client';
import { Page, pageQuery } from './paging';

export type Proposal = Schemas['Proposal'];
export type ProposalState = Proposal['state'];
export const PROPOSAL_STATES: ProposalState[] = ['draft', 'revised', 'applied', 'rejected', 'archived'];
/** States in which a proposal can still be revised, applied or rejected. */
export const OPEN_STATES: ReadonlySet<string> = new Set(['draft', 'revised']);

export async function listProposals(opts: { state?: ProposalState; cursor?: string }): Promise<Page<Proposal>> {
  const r = await call(api.GET('/v1/proposals', { params: { query: { ...pageQuery(opts.cursor), ...(opts.state ? { state: opts.state } : {}) } } }));
  return { items: r.proposals, nextCursor: r.nextCursor };
}

export function getProposal(id: string): Promise<Proposal> {
  return call(api.GET('/v1/proposals/{id}', { params: { path: { id } } }));
}

export function reviseProposal(id: string, artifact: unknown, note?: string): Promise<Proposal> {
  return call(api.PATCH('/v1/proposals/{id}', { params: { path: { id } }, body: { artifact: artifact as Record<string, never>, ...(note ? { note } : {}) } }));
}

export function applyProposal(id: string) {
  return call(api.POST('/v1/proposals/{id}/apply', { params: { path: { id } } }));
}

export function rejectProposal(id: string, reason?: string): Promise<Proposal> {
  return call(api.POST('/v1/proposals/{id}/reject', { params: { path: { id } }, body: reason ? { reason } : {} }));
}

export function archiveProposal(id: string): Promise<Proposal> {
  return call(api.DELETE('/v1/proposals/{id}', { params: { path: { id } } }));
}
