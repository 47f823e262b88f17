/**
 * A run's live event stream (`GET /v1/runs/{runId}/events`, SSE). It is read by hand with fetch (an
 * EventSource cannot send the Authorization header), its events typed as the generated RunEvent.
 */
import { credential } from '../session';
import { ApiError, paths, reportRefusal, toApiError } from './client';
import { RunEvent, TERMINAL_EVENTS } from './runs';

/**
 * Follows a run's events over SSE (`GET /v1/runs/{runId}/events`). The stream is read with fetch and
 * parsed here; after a dropped connection it reconnects with `Last-Event-ID` (the last `id:` seen), so
 * the host resumes after the last event delivered. Stops after the terminal run event. Returns a function
 * that stops following.
 */
export function followRunEvents(runId: string, onEvent: (e: RunEvent) => void, onError: (e: ApiError) => void): () => void {
  const abort = new AbortController();
  const path: keyof paths = '/v1/runs/{runId}/events';
  // Every event (debug): the run view draws running nodes from node.started, which `updates` leaves out.
  const url = `${path.replace('{runId}', encodeURIComponent(runId))}?streamMode=debug`;
  let lastId: string | undefined;
  let stopped = false;
  const loop = async () => {
    // Reconnects after a dropped stream; gives up after 20 failures in a row (a served stream resets the count).
    for (let failures = 0; !stopped && failures < 20; ) {
      try {
        const headers = new Headers({ accept: 'text/event-stream' });
        const token = credential();
        if (token) headers.set('authorization', `Bearer ${token}`);
        else headers.set('x-openwop-session', '1');
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
