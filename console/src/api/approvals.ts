/**
 * RFC 0051 approval gates (`/v1/approvals`) through the generated client, and what the console shows
 * of each: the gate item names its subject (`run-node` + run id, or `proposal` + proposal id) and an
 * `artifactRef` (`run:<runId>#<nodeId>` for a run step), but not its title, node or workflow, so those
 * are read from the subject (the run's definition, the proposal) where the credential may read it.
 */
import { api, call, paths } from './client';
import { Page, pageQuery } from './paging';
import { getProposal } from './proposals';
import { getRunDefinition } from './runs';

export type Approval = paths['/v1/approvals/{id}']['get']['responses'][200]['content']['application/json'];
export type ApprovalState = Approval['state'];

/** The subject kind of a run step's gate (a `core.approval` node). */
export const RUN_STEP = 'run-node';

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

/** The run and node a run-step gate holds, from its `artifactRef` (`run:<runId>#<nodeId>`). */
export function runStepOf(a: Pick<Approval, 'subject' | 'artifactRef'>): { runId: string; nodeId?: string } | undefined {
  if (a.subject.kind !== RUN_STEP) return undefined;
  const m = /^run:([^#]+)#(.+)$/.exec(a.artifactRef);
  return { runId: a.subject.id, ...(m && m[1] === a.subject.id ? { nodeId: m[2] } : {}) };
}

export interface GateView {
  approval: Approval;
  title?: string;
  runId?: string;
  nodeId?: string;
  workflowId?: string;
  proposalId?: string;
}

/**
 * Each gate with its title, run, node and workflow (run steps: from the run's definition, when `canReadRuns`;
 * the title is the `core.approval` node's `config.title`) or its proposal's title (when `canReadProposals`).
 * A subject the credential may not read, or that is gone, leaves those facts out; each subject is read once.
 */
export async function describeGates(approvals: Approval[], can: { runs: boolean; proposals: boolean }): Promise<GateView[]> {
  const definitions = new Map<string, ReturnType<typeof getRunDefinition>>();
  const proposals = new Map<string, ReturnType<typeof getProposal>>();
  return Promise.all(
    approvals.map(async (approval): Promise<GateView> => {
      const step = runStepOf(approval);
      if (step) {
        const view: GateView = { approval, ...step };
        if (!can.runs) return view;
        if (!definitions.has(step.runId)) definitions.set(step.runId, getRunDefinition(step.runId));
        const def = await definitions.get(step.runId)!.catch(() => undefined);
        if (!def) return view;
        const title = def.nodes.find((n) => n.id === step.nodeId)?.config.title;
        return { ...view, workflowId: def.workflowId, ...(typeof title === 'string' && title ? { title } : {}) };
      }
      if (approval.subject.kind === 'proposal') {
        const view: GateView = { approval, proposalId: approval.subject.id };
        if (!can.proposals) return view;
        if (!proposals.has(approval.subject.id)) proposals.set(approval.subject.id, getProposal(approval.subject.id));
        const p = await proposals.get(approval.subject.id)!.catch(() => undefined);
        return p?.title ? { ...view, title: p.title } : view;
      }
      return { approval };
    }),
  );
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
