/**
 * RFC 0051 approval gates (`/v1/approvals`) through the generated client. Each item names what it
 * holds: its title, its subject (`run-node` + run id, or `proposal` + proposal id) and, for a run step,
 * the run, node and workflow.
 */
import { api, call, paths } from './client';
import { Page, pageQuery } from './paging';

export type Approval = paths['/v1/approvals/{id}']['get']['responses'][200]['content']['application/json'];
export type ApprovalState = Approval['state'];

export async function listApprovals(opts: { state?: ApprovalState; cursor?: string }): Promise<Page<Approval>> {
  const r = await call(api.GET('/v1/approvals', { params: { query: { ...pageQuery(opts.cursor), ...(opts.state ? { state: opts.state } : {}) } } }));
  return { items: r.approvals, nextCursor: r.nextCursor };
}

export function getApproval(id: string): Promise<Approval> {
  return call(api.GET('/v1/approvals/{id}', { params: { path: { id } } }));
}

export function decideApproval(id: string, decision: 'grant' | 'deny', reason?: string): Promise<Approval> {
  const opts = { params: { path: { id } }, body: reason ? { reason } : {} };
  return call(decision === 'grant' ? api.POST('/v1/approvals/{id}/grant', opts) : api.POST('/v1/approvals/{id}/deny', opts));
}

/** Resolves a run step's interrupt with a resume value (a clarification's answers, an external event). */
export function resolveApproval(id: string, resumeValue: Record<string, unknown>): Promise<unknown> {
  return call(api.POST('/v1/approvals/{id}/resolve', { params: { path: { id } }, body: { resumeValue } }));
}

export interface GateView {
  approval: Approval;
  title?: string;
  runId?: string;
  nodeId?: string;
  workflowId?: string;
  proposalId?: string;
}

/** What the console shows of a gate: the facts its item carries. */
export function describeGate(approval: Approval): GateView {
  return {
    approval,
    title: approval.title,
    ...(approval.runId ? { runId: approval.runId } : {}),
    ...(approval.nodeId ? { nodeId: approval.nodeId } : {}),
    ...(approval.workflowId ? { workflowId: approval.workflowId } : {}),
    ...(approval.subject.kind === 'proposal' ? { proposalId: approval.subject.id } : {}),
  };
}

/** The pending gate of a subject (a proposal being applied), looked up page by page; undefined when none. */
export async function findPendingGate(kind: string, subjectId: string): Promise<Approval | undefined> {
  let cursor: string | undefined;
  do {
    const page = await listApprovals({ state: 'pending', cursor });
    const found = page.items.find((a) => a.subject.kind === kind && a.subject.id === subjectId);
    if (found) return found;
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  return undefined;
}
