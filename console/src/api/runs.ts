/**
 * The run engine's API (`/v1/runs`) through the generated client: list, read, start, cancel, and the
 * live event stream. Every type here comes from the committed OpenAPI document; only the SSE stream is
 * read by hand (EventSource cannot send an Authorization header), its events typed as the generated
 * RunEvent.
 */
import { api, ApiError, call, reportRefusal, toApiError } from './client';
import type { paths, Schemas } from './client';
import { credential } from '../session';

export type RunSnapshot = Schemas['RunSnapshot'];
export type RunEvent = Schemas['RunEvent'];
export type RunStatus = RunSnapshot['status'];
export type CreateRunBody = Schemas['CreateRunBody'];
export type RunPage = paths['/v1/runs']['get']['responses'][200]['content']['application/json'];

/** Every status of the generated enum, in the order of the protocol's lifecycle. */
const STATUS_ORDER: Record<RunStatus, true> = {
  pending: true,
  running: true,
  paused: true,
  'waiting-approval': true,
  'waiting-input': true,
  'waiting-external': true,
  completed: true,
  failed: true,
  cancelling: true,
  cancelled: true,
};
export const RUN_STATUSES = Object.keys(STATUS_ORDER) as RunStatus[];
export const TERMINAL: ReadonlySet<string> = new Set<RunStatus>(['completed', 'failed', 'cancelled']);
const TERMINAL_EVENTS: ReadonlySet<string> = new Set<RunEvent['type']>(['run.completed', 'run.failed', 'run.cancelled']);

/** What the engine reports per node in `nodeStates` (the wire schema leaves the value open). */
export interface NodeState {
  status: string;
  attempt?: number;
  error?: { code: string; message: string };
}

export function nodeStates(run: RunSnapshot): Array<[string, NodeState]> {
  const states = (run.nodeStates ?? {}) as Record<string, unknown>;
  return Object.entries(states).map(([id, v]) => [id, (typeof v === 'object' && v !== null ? v : { status: String(v) }) as NodeState]);
}

export const PAGE_SIZE = 10;

export function listRuns(opts: { status?: RunStatus; cursor?: string }): Promise<RunPage> {
  return call(api.GET('/v1/runs', { params: { query: { limit: PAGE_SIZE, ...(opts.status ? { status: opts.status } : {}), ...(opts.cursor ? { cursor: opts.cursor } : {}) } } }));
}

export function getRun(runId: string): Promise<RunSnapshot> {
  return call(api.GET('/v1/runs/{runId}', { params: { path: { runId } } }));
}

export function startRun(body: CreateRunBody): Promise<RunSnapshot> {
  return call(api.POST('/v1/runs', { body }));
}

export function cancelRun(runId: string): Promise<RunSnapshot> {
  return call(api.POST('/v1/runs/{runId}/cancel', { params: { path: { runId } }, body: { reason: 'cancelled from the operator console' } }));
}

/**
 * Follows a run's events over SSE (`GET /v1/runs/{runId}/events`). The stream is read with fetch and
 * parsed here; after a dropped connection it reconnects with `Last-Event-ID` (the last `id:` seen), so
 * the host resumes after the last event delivered. Stops after the terminal run event. Returns a function
 * that stops following.
 */
export function followRunEvents(runId: string, onEvent: (e: RunEvent) => void, onError: (e: ApiError) => void): () => void {
  const abort = new AbortController();
  const path: keyof paths = '/v1/runs/{runId}/events';
  const url = path.replace('{runId}', encodeURIComponent(runId));
  let lastId: string | undefined;
  let stopped = false;
  const loop = async () => {
    // Reconnects after a dropped stream; gives up after 20 failures in a row (a served stream resets the count).
    for (let failures = 0; !stopped && failures < 20; ) {
      try {
        const headers = new Headers({ accept: 'text/event-stream' });
        const token = credential();
        if (token) headers.set('authorization', `Bearer ${token}`);
        if (lastId) headers.set('last-event-id', lastId);
        const res = await fetch(url, { headers, signal: abort.signal });
        if (!res.ok || !res.body) {
          const body: unknown = await res.json().catch(() => undefined);
          reportRefusal(res.status, body);
          onError(toApiError(res.status, body));
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
            let id: string | undefined;
            for (const line of block.split(/\r?\n/)) {
              if (line.startsWith('id:')) id = line.slice(3).trim();
              else if (line.startsWith('data:')) data += (data ? '\n' : '') + line.slice(5).replace(/^ /, '');
            }
            if (!data) continue;
            let event: RunEvent;
            try {
              event = JSON.parse(data) as RunEvent;
            } catch {
              continue; // not an event (a comment or keep-alive)
            }
            if (id) lastId = id;
            onEvent(event);
            if (TERMINAL_EVENTS.has(event.type)) {
              stopped = true;
              abort.abort();
              return;
            }
          }
        }
      } catch (e) {
        if (stopped || abort.signal.aborted) return;
        if (++failures === 20) onError(new ApiError(0, 'network_error', e instanceof Error ? e.message : 'The event stream broke.'));
      }
      if (!stopped) await new Promise((r) => setTimeout(r, 1000));
    }
  };
  void loop();
  return () => {
    stopped = true;
    abort.abort();
  };
}
