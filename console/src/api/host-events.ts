/**
 * The tenant's host event stream (`GET /v1/runs/host/events/poll`): approval gates requested and
 * decided, proposals, goals, connections and imports, as they are written. One long poll serves every
 * list on screen: it starts with the first subscriber, catches up to the end of the stream without
 * waiting (the past is not news), then waits up to 25 s per request for what comes next.
 */
import { api, call } from './client';

type Listener = (type: string) => void;

const listeners = new Set<Listener>();
let running = false;

async function follow(): Promise<void> {
  running = true;
  let after = 0;
  let caughtUp = false;
  let failures = 0;
  while (listeners.size) {
    try {
      const r = await call(api.GET('/v1/runs/{runId}/events/poll', { params: { path: { runId: 'host' }, query: { lastSequence: after, timeout: caughtUp ? 25 : 0 } } }));
      failures = 0;
      after = r.lastSequence;
      if (caughtUp) for (const e of r.events) for (const l of [...listeners]) l(e.type);
      // The catch-up reads whole pages until one comes back short.
      if (!caughtUp && r.events.length < 1000) caughtUp = true;
    } catch {
      // A refused or broken poll: the lists keep their own reload; try again a little later, then give up.
      if (++failures >= 5) break;
      await new Promise((res) => setTimeout(res, 2000));
    }
  }
  running = false;
}

/** Calls `onEvent` with the type of each new host event until the returned function is called. */
export function onHostEvents(onEvent: Listener): () => void {
  listeners.add(onEvent);
  if (!running) void follow();
  return () => listeners.delete(onEvent);
}
