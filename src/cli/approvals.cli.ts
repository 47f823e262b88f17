import type { operations } from '../../generated/openapi';
import { baseUrl, call, HostClientOptions } from './host-client';

/**
 * `openwop-host approvals list|grant|deny`: a client of a running host's `/v1/approvals` routes,
 * authenticated with an API key that holds `approvals:respond`.
 */

/** An approval gate as the host answers it (`GET /v1/approvals`, `POST /v1/approvals/{id}/grant|deny`). */
type ApprovalItem = operations['getApproval']['responses'][200]['content']['application/json'];
type ApprovalPage = operations['listApprovals']['responses'][200]['content']['application/json'];

function where(a: ApprovalItem): string {
  if (a.runId) return `run ${a.runId}${a.nodeId ? ` node ${a.nodeId}` : ''}${a.workflowId ? ` (${a.workflowId})` : ''}`;
  return `${a.subject.kind} ${a.subject.id}`;
}

function line(o: HostClientOptions, a: ApprovalItem): string {
  const link = /^https?:\/\//.test(a.link) ? a.link : `${baseUrl(o)}${a.link}`;
  const kind = a.kind && a.kind !== 'approval' ? ` [${a.kind}]` : '';
  return `${a.id}  ${a.state.padEnd(9)} ${a.granted}/${a.quorum}  ${a.title}${kind}\n    ${where(a)}  ${link}\n`;
}

export async function approvalsList(o: HostClientOptions, opts: { all?: boolean; state?: string; limit?: number; json?: boolean }): Promise<number> {
  const q = new URLSearchParams();
  const state = opts.all ? undefined : (opts.state ?? 'pending');
  if (state) q.set('state', state);
  if (opts.limit) q.set('limit', String(opts.limit));
  const page = (await call(o, 'GET', `/v1/approvals${q.size ? `?${q}` : ''}`)) as unknown as ApprovalPage;
  if (opts.json) {
    o.out.write(`${JSON.stringify(page, null, 2)}\n`);
    return 0;
  }
  const items = page.approvals;
  if (!items.length) o.err.write(state ? `no ${state} approval\n` : 'no approval\n');
  for (const a of items) o.out.write(line(o, a));
  if (page.nextCursor) o.err.write('more approvals exist: raise --limit (at most 200)\n');
  return 0;
}

export async function approvalsDecide(o: HostClientOptions, decision: 'grant' | 'deny', id: string, opts: { reason?: string; json?: boolean }): Promise<number> {
  const a = (await call(o, 'POST', `/v1/approvals/${encodeURIComponent(id)}/${decision}`, opts.reason ? { reason: opts.reason } : {})) as unknown as ApprovalItem;
  if (opts.json) o.out.write(`${JSON.stringify(a, null, 2)}\n`);
  else if (decision === 'grant' && a.state === 'pending') o.out.write(`${a.id}  granted ${a.granted} of ${a.quorum}: the gate waits for more approvers\n`);
  else o.out.write(`${a.id}  ${a.state}  ${a.title}\n`);
  return 0;
}

/** `approvals resolve <id> --value <json>`: resolves a run step's interrupt (a clarification's answers, an external event) with a resume value. */
export async function approvalsResolve(o: HostClientOptions, id: string, opts: { value: string; json?: boolean }): Promise<number> {
  let resumeValue: unknown;
  try {
    resumeValue = JSON.parse(opts.value);
  } catch {
    o.err.write('--value must be JSON, e.g. \'{"answers":{"q1":"blue"}}\'\n');
    return 2;
  }
  const r = await call(o, 'POST', `/v1/approvals/${encodeURIComponent(id)}/resolve`, { resumeValue });
  if (opts.json) o.out.write(`${JSON.stringify(r, null, 2)}\n`);
  else o.out.write(`${id}  ${String(r.interruptState)}  run ${String(r.runId)} node ${String(r.nodeId)} is ${String(r.status)}\n`);
  return 0;
}
