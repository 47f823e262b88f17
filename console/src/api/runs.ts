/**
 * The run engine's API (`/v1/runs`): list, get, cancel and the live event stream. Kept in this one
 * module with hand-written types (from the published run-snapshot and run-event schemas) because a host
 * without a run engine has none of these routes in its OpenAPI document; when it does, these calls
 * can move to the generated client.
 */
import { ApiError, reportRefusal, toApiError } from './client';
import { credential } from '../session';

export type RunStatus =
  | 'pending'
  | 'running'
  | 'paused'
  | 'waiting-approval'
  | 'waiting-input'
  | 'waiting-external'
  | 'completed'
  | 'failed'
  | 'cancelling'
  | 'cancelled';

export const RUN_STATUSES: RunStatus[] = ['pending', 'running', 'paused', 'waiting-approval', 'waiting-input', 'waiting-external', 'completed', 'failed', 'cancelling', 'cancelled'];
export const TERMINAL: ReadonlySet<string> = new Set(['completed', 'failed', 'cancelled']);

/** run-snapshot.schema.json (the fields the console shows). */
export interface RunSnapshot {
  runId: string;
  workflowId: string;
  status: RunStatus | string;
  currentNodeId?: string | null;
  startedAt?: string;
  completedAt?: string | null;
  error?: { code?: string; message?: string } | null;
  outputs?: unknown;
  configurable?: Record<string, unknown>;
  metrics?: Record<string, unknown>;
  tags?: string[];
}

/** run-event.schema.json */
export interface RunEvent {
  eventId: string;
  runId: string;
  nodeId?: string;
  type: string;
  payload: unknown;
  timestamp: string;
  sequence: number;
  causationId?: string;
}

export interface RunPage {
  runs: RunSnapshot[];
  nextCursor?: string | null;
}

async function request(path: string, init: RequestInit = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  const token = credential();
  if (token) headers.set('authorization', `Bearer ${token}`);
  try {
    return await fetch(path, { ...init, headers });
  } catch (e) {
    throw new ApiError(0, 'network_error', e instanceof Error ? e.message : 'The host could not be reached.');
  }
}

async function json<T>(res: Response): Promise<T> {
  const body: unknown = await res.json().catch(() => undefined);
  reportRefusal(res.status, body);
  if (!res.ok) throw toApiError(res.status, body);
  return body as T;
}

/** Whether this host serves runs: an unknown route answers 404, a served one 200 (or 401/403). */
export async function runsServed(): Promise<boolean> {
  const res = await request('/v1/runs').catch(() => undefined);
  return Boolean(res && res.status !== 404);
}

export async function listRuns(opts: { status?: string; cursor?: string } = {}): Promise<RunPage> {
  const q = new URLSearchParams();
  if (opts.status) q.set('status', opts.status);
  if (opts.cursor) q.set('cursor', opts.cursor);
  const body = await json<{ runs?: RunSnapshot[]; items?: RunSnapshot[]; nextCursor?: string | null; cursor?: string | null }>(
    await request(`/v1/runs${q.size ? `?${q}` : ''}`),
  );
  return { runs: body.runs ?? body.items ?? [], nextCursor: body.nextCursor ?? body.cursor ?? null };
}

export async function getRun(runId: string): Promise<RunSnapshot> {
  return json<RunSnapshot>(await request(`/v1/runs/${encodeURIComponent(runId)}`));
}

export async function cancelRun(runId: string): Promise<RunSnapshot> {
  return json<RunSnapshot>(await request(`/v1/runs/${encodeURIComponent(runId)}/cancel`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' }));
}

/**
 * Follows a run's events over SSE. EventSource cannot send an Authorization header, so the stream is
 * read with fetch and parsed here; on a dropped connection it resumes with Last-Event-ID. Returns a
 * function that stops following.
 */
export function followRunEvents(runId: string, onEvent: (e: RunEvent) => void, onError: (e: ApiError) => void): () => void {
  const abort = new AbortController();
  let lastId: string | undefined;
  let stopped = false;
  const loop = async () => {
    // Reconnects after a dropped stream; gives up after 20 failures in a row (a served stream resets the count).
    for (let failures = 0; !stopped && failures < 20; ) {
      try {
        const res = await request(`/v1/runs/${encodeURIComponent(runId)}/events`, {
          headers: { accept: 'text/event-stream', ...(lastId ? { 'last-event-id': lastId } : {}) },
          signal: abort.signal,
        });
        if (!res.ok || !res.body) {
          onError(toApiError(res.status, await res.json().catch(() => undefined)));
          return;
        }
        failures = 0;
        const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
        let buf = '';
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buf += value;
          let cut: number;
          while ((cut = buf.search(/\r?\n\r?\n/)) >= 0) {
            const block = buf.slice(0, cut);
            buf = buf.slice(cut).replace(/^\r?\n\r?\n/, '');
            let data = '';
            for (const line of block.split(/\r?\n/)) {
              if (line.startsWith('id:')) lastId = line.slice(3).trim();
              else if (line.startsWith('data:')) data += (data ? '\n' : '') + line.slice(5).replace(/^ /, '');
            }
            if (!data) continue;
            try {
              const event = JSON.parse(data) as RunEvent;
              onEvent(event);
              if (/^run\.(completed|failed|cancelled)$/.test(event.type)) {
                stopped = true;
                abort.abort();
                return;
              }
            } catch {
              // A comment or keep-alive that is not JSON: ignored.
            }
          }
        }
      } catch (e) {
        if (stopped || abort.signal.aborted) return;
        if (++failures === 20) onError(new ApiError(0, 'network_error', e instanceof Error ? e.message : 'The event stream broke.'));
      }
      await new Promise((r) => setTimeout(r, 1000));
    }
  };
  void loop();
  return () => {
    stopped = true;
    abort.abort();
  };
}
