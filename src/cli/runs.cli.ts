import { call, commandLine, hostFetch, HostClientOptions, HostUnreachableError } from './host-client';

/**
 * `openwop-host runs start|list|cancel`: a client of a running host's HTTP API (the run engine
 * executes runs in the host, not in the CLI), authenticated with an API key.
 */
export type RunsCliOptions = HostClientOptions;

interface ErrorBody {
  error?: string;
  message?: string;
}

/** `--input k=v` values: JSON when they parse (numbers, booleans, objects), else the string. */
export function parseInputs(pairs: string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const p of pairs) {
    const i = p.indexOf('=');
    if (i < 1) throw new Error(`--input expects key=value, got "${p}"`);
    const raw = p.slice(i + 1);
    let v: unknown = raw;
    try {
      v = JSON.parse(raw);
    } catch {
      /* a plain string */
    }
    out[p.slice(0, i)] = v;
  }
  return out;
}

export async function runsStart(o: RunsCliOptions, workflowId: string, opts: { input?: string[]; follow?: boolean; idempotencyKey?: string; json?: boolean }): Promise<number> {
  const run = await call(o, 'POST', '/v1/runs', { workflowId, inputs: parseInputs(opts.input ?? []) }, opts.idempotencyKey ? { 'idempotency-key': opts.idempotencyKey } : {});
  const runId = String(run.runId);
  if (!opts.follow) {
    o.out.write(opts.json ? `${JSON.stringify(run)}\n` : `${runId}  ${run.status}\n`);
    return 0;
  }
  o.err.write(`run ${runId} started\n`);
  return follow(o, runId, opts.json === true);
}

/** How many nodes the run's chain has (`GET /v1/runs/{runId}/definition`), or undefined when it cannot be read; a host that does not answer fails the command. */
async function nodeCount(o: RunsCliOptions, runId: string): Promise<number | undefined> {
  try {
    const def = await call(o, 'GET', `/v1/runs/${encodeURIComponent(runId)}/definition`);
    return Array.isArray(def.nodes) ? def.nodes.length : undefined;
  } catch (e) {
    if (e instanceof HostUnreachableError) throw e;
    return undefined;
  }
}

/**
 * The state of the gate a `node.suspended` event names, asked of the host when the event is read (a
 * replayed event of a gate decided since must not ask for a decision again): the gate itself
 * (`GET /v1/approvals/{id}`, needs approvals:respond), else the run's view of the node, `pending` while
 * the node waits and `closed` once it does not. Undefined when neither can be read.
 */
async function gateState(o: RunsCliOptions, runId: string, gate: string, node: string | undefined): Promise<string | undefined> {
  const read = async (path: string): Promise<Record<string, unknown> | undefined> => {
    try {
      return await call(o, 'GET', path);
    } catch (e) {
      if (e instanceof HostUnreachableError) throw e;
      return undefined;
    }
  };
  const approval = await read(`/v1/approvals/${encodeURIComponent(gate)}`);
  if (typeof approval?.state === 'string') return approval.state;
  const run = await read(`/v1/runs/${encodeURIComponent(runId)}`);
  const nodeState = node ? (run?.nodeStates as Record<string, { status?: string }> | undefined)?.[node]?.status : undefined;
  if (nodeState) return nodeState === 'waiting' ? 'pending' : 'closed';
  return undefined;
}

/** What a followed run waiting on a gate needs: the command that decides it while it is pending, else its state. */
async function gateNotice(o: RunsCliOptions, runId: string, kind: string, gate: string, node: string | undefined): Promise<string> {
  const what = `${kind} ${gate}${node ? ` (node ${node})` : ''}`;
  const state = await gateState(o, runId, gate, node);
  if (state === 'closed') return `${what} no longer waits`;
  if (state && state !== 'pending') return `${what} was ${state} already`;
  if (kind === 'approval') return `waiting for ${what}; grant it with: ${commandLine(o, 'approvals', 'grant', gate)}`;
  return `waiting for ${what}; resolve it with: ${commandLine(o, 'approvals', 'resolve', gate, '--value', "'<json>'")}`;
}

/** `<status> <error>: <message>` of an error answer (the canonical envelope), or its status alone. */
async function describeFailure(res: Response): Promise<string> {
  const text = await res.text().catch(() => '');
  try {
    const e = JSON.parse(text) as ErrorBody;
    if (e.error) return `${res.status} ${e.error}: ${e.message ?? ''}`.trim();
  } catch {
    /* not JSON */
  }
  return `${res.status}${text ? `: ${text.slice(0, 200)}` : ''}`;
}

const FOLLOW_RETRY_MS = 60_000;

/**
 * Streams the run's events (SSE) with a progress line, `k/n nodes done`: k the nodes that completed,
 * n the nodes of the chain. While the run waits on an approval gate it says so, with the command that
 * grants it (a gate decided already is named with its state instead). Exit code 0 when the run completes. A stream that breaks before the run ends (the host
 * restarting, a proxy timing out) is resumed after the last event seen (Last-Event-ID), and a 503 is
 * retried after its Retry-After, for up to a minute.
 */
async function follow(o: RunsCliOptions, runId: string, json: boolean): Promise<number> {
  const total = await nodeCount(o, runId);
  const completed = new Set<string>();
  let terminal = '';
  let last = 0;
  let retryUntil = Date.now() + FOLLOW_RETRY_MS;
  const decoder = new TextDecoder();
  while (!terminal) {
    let res: Response | undefined;
    let broken = '';
    try {
      // Every event (debug): the progress line and the gate notice read node events `updates` may leave out.
      res = await hostFetch(o, `/v1/runs/${encodeURIComponent(runId)}/events?streamMode=debug`, {
        headers: { authorization: `Bearer ${o.key}`, accept: 'text/event-stream', ...(last ? { 'last-event-id': String(last) } : {}) },
      });
    } catch (e) {
      broken = (e as Error).message;
    }
    if (res && !res.ok) {
      const why = await describeFailure(res);
      if (res.status !== 503 || Date.now() > retryUntil) throw new Error(`cannot follow the run: ${why}`);
      const wait = Math.min(30, Math.max(1, Number(res.headers.get('retry-after')) || 2));
      o.err.write(`${why}; retrying in ${wait} s\n`);
      await new Promise((r) => setTimeout(r, wait * 1000));
      continue;
    }
    if (res?.body) {
      let buf = '';
      try {
        for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
          buf += decoder.decode(chunk, { stream: true });
          let sep: number;
          while ((sep = buf.indexOf('\n\n')) >= 0) {
            const frame = buf.slice(0, sep);
            buf = buf.slice(sep + 2);
            const data = frame.split('\n').find((l) => l.startsWith('data: '));
            if (!data) continue;
            const e = JSON.parse(data.slice(6)) as { type: string; sequence: number; nodeId?: string; payload: Record<string, unknown> };
            if (e.sequence <= last) continue;
            last = e.sequence;
            retryUntil = Date.now() + FOLLOW_RETRY_MS;
            if (json) o.out.write(`${JSON.stringify(e)}\n`);
            const node = e.nodeId ?? (typeof e.payload.nodeId === 'string' ? e.payload.nodeId : undefined);
            // A node re-executed after a takeover completes once more: count nodes, not events.
            if (e.type === 'node.completed' && node) completed.add(node);
            if (e.type === 'run.completed' || e.type === 'run.failed' || e.type === 'run.cancelled') terminal = e.type;
            o.err.write(`[${String(e.sequence).padStart(4)}] ${completed.size}/${total ?? '?'} nodes done  ${e.type}${node ? ` ${node}` : ''}\n`);
            const gate = e.payload.interruptId;
            if (e.type === 'node.suspended' && typeof e.payload.kind === 'string' && typeof gate === 'string') {
              o.err.write(`${await gateNotice(o, runId, e.payload.kind, gate, node)}\n`);
            }
          }
        }
      } catch (e) {
        broken = `the event stream broke: ${(e as Error).message}`;
      }
    }
    if (terminal) break;
    // The stream ended before the run did.
    if (Date.now() > retryUntil) throw new Error(`cannot follow the run: ${broken || 'the event stream ended before the run'}`);
    o.err.write(`${broken || 'the event stream ended before the run'}; resuming after event ${last}\n`);
    await new Promise((r) => setTimeout(r, 1000));
  }
  const snap = await call(o, 'GET', `/v1/runs/${encodeURIComponent(runId)}`);
  if (!json) o.out.write(`${runId}  ${snap.status}${snap.error ? `  ${(snap.error as ErrorBody & { code?: string }).code}` : ''}\n${snap.outputs ? `${JSON.stringify(snap.outputs, null, 2)}\n` : ''}`);
  return terminal === 'run.completed' ? 0 : 1;
}

/** Follows a run already started (from its first event, so a finished run is shown whole); exit 0 only if it completed. */
export async function runsFollow(o: RunsCliOptions, runId: string, opts: { json?: boolean }): Promise<number> {
  return follow(o, runId, opts.json === true);
}

export async function runsList(o: RunsCliOptions, opts: { status?: string; json?: boolean; limit?: number }): Promise<number> {
  const q = new URLSearchParams();
  if (opts.status) q.set('status', opts.status);
  if (opts.limit) q.set('limit', String(opts.limit));
  const page = await call(o, 'GET', `/v1/runs${q.size ? `?${q}` : ''}`);
  const runs = page.runs as Array<Record<string, unknown>>;
  if (opts.json) o.out.write(`${JSON.stringify(page, null, 2)}\n`);
  else for (const r of runs) o.out.write(`${r.runId}  ${String(r.status).padEnd(16)} ${r.workflowId}${r.startedAt ? `  ${r.startedAt}` : ''}${r.parentRunId ? `  child of ${r.parentRunId}` : ''}\n`);
  return 0;
}

/** One run: its status and workflow, the run (and node) that started it, and each child run it started. */
export async function runsGet(o: RunsCliOptions, runId: string, opts: { json?: boolean }): Promise<number> {
  const snap = await call(o, 'GET', `/v1/runs/${encodeURIComponent(runId)}`);
  if (opts.json) {
    o.out.write(`${JSON.stringify(snap, null, 2)}\n`);
    return 0;
  }
  o.out.write(`${snap.runId}  ${String(snap.status).padEnd(16)} ${snap.workflowId}\n`);
  if (snap.parentRunId) o.out.write(`  parent  ${snap.parentRunId}${snap.parentNodeId ? ` (node ${snap.parentNodeId})` : ''}\n`);
  for (const c of (snap.childRuns ?? []) as Array<Record<string, unknown>>) o.out.write(`  child   ${c.runId}  ${String(c.status).padEnd(16)} ${c.workflowId}${c.parentNodeId ? ` (node ${c.parentNodeId})` : ''}\n`);
  if (snap.error) o.out.write(`  error   ${(snap.error as { code: string }).code}: ${(snap.error as { message: string }).message}\n`);
  return 0;
}

export async function runsCancel(o: RunsCliOptions, runId: string): Promise<number> {
  const snap = await call(o, 'POST', `/v1/runs/${encodeURIComponent(runId)}/cancel`, {});
  o.out.write(`${snap.runId}  ${snap.status}\n`);
  return 0;
}

/** `dead-letters list`: the runs of the sink, newest first (RFC 0053). */
export async function deadLettersList(o: RunsCliOptions, opts: { workflowId?: string; limit?: number; json?: boolean }): Promise<number> {
  const q = new URLSearchParams();
  if (opts.workflowId) q.set('workflowId', opts.workflowId);
  if (opts.limit) q.set('limit', String(opts.limit));
  const page = await call(o, 'GET', `/v1/dead-letters${q.size ? `?${q}` : ''}`);
  if (opts.json) o.out.write(`${JSON.stringify(page, null, 2)}\n`);
  else for (const d of page.deadLetters as Array<Record<string, unknown>>) o.out.write(`${d.runId}  ${d.workflowId}  node ${d.nodeId}  ${d.reason} after ${d.attempts} attempts  ${d.deadLetteredAt}\n`);
  return 0;
}

/** `dead-letters get|retry|purge RUN_ID`. */
export async function deadLetter(o: RunsCliOptions, action: 'get' | 'retry' | 'purge', runId: string, opts: { json?: boolean }): Promise<number> {
  const path = `/v1/dead-letters/${encodeURIComponent(runId)}`;
  if (action === 'purge') {
    await call(o, 'DELETE', path);
    o.out.write(`${runId} purged from the dead letters\n`);
    return 0;
  }
  const body = action === 'retry' ? await call(o, 'POST', `${path}/retry`) : await call(o, 'GET', path);
  if (opts.json) o.out.write(`${JSON.stringify(body, null, 2)}\n`);
  else if (action === 'retry') o.out.write(`${body.runId}  started again from ${runId}\n`);
  else o.out.write(`${body.runId}  ${body.status}  ${body.workflowId}  node ${body.nodeId}  ${body.reason} after ${body.attempts} attempts  expires ${body.expiresAt}${(body.retriedRunIds as string[]).length ? `  retried as ${(body.retriedRunIds as string[]).join(', ')}` : ''}\n`);
  return 0;
}
