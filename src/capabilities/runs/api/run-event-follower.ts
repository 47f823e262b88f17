import type { EventLogService, RunEventView } from '../../../platform/events/event-log.service';
import type { TenantScope } from '../../../platform/identity/principal';
import type { RunSnapshot } from '../run-snapshot';

/** The run events after which a run's stream has nothing more to say. */
export const TERMINAL_RUN_EVENTS: ReadonlySet<string> = new Set(['run.completed', 'run.failed', 'run.cancelled']);
const TERMINAL_STATUSES: ReadonlySet<string> = new Set(['completed', 'failed', 'cancelled']);

/**
 * Follows the events of a run after sequence `after`, in sequence order, as every streaming
 * transport serves them (SSE, gRPC StreamRunEvents): each long-poll's batch is yielded, an empty
 * one when `waitMs` passed with nothing new (a caller may send a keep-alive then); it ends after the
 * batch holding the terminal run event, or, for a run that had already finished when the stream
 * opened, once the log has nothing more. `closed` is checked between polls: a client that went away
 * only ends its stream; it never touches the run. `first`: the events already read when the stream
 * opened, with the run's status; `readAt`: when they were read (OpenedRun.readAt).
 */
export async function* followRunEvents(
  events: EventLogService,
  scope: TenantScope,
  snapshot: Pick<RunSnapshot, 'runId' | 'status'>,
  after: number,
  opts: { waitMs: number; closed: () => boolean; first?: RunEventView[]; readAt?: number },
): AsyncGenerator<RunEventView[]> {
  let ended = TERMINAL_STATUSES.has(snapshot.status);
  // The events read with the run's status when the stream opened (EventLogService.openRun) come first.
  let first = opts.first;
  // The first poll after them may take that read as its own (see EventLogService.poll).
  let readAt = first ? opts.readAt : undefined;
  while (!opts.closed()) {
    let batch: RunEventView[];
    if (first) {
      batch = first;
      first = undefined;
      // Nothing after `after` in a run that had ended when it was read: nothing more will come.
      if (!batch.length) {
        if (ended) return;
        continue;
      }
    } else {
      batch = await events.poll(scope, snapshot.runId, after, ended ? 0 : opts.waitMs, readAt);
      readAt = undefined;
    }
    if (!batch.length && ended) return;
    let terminal = false;
    for (const e of batch) {
      after = e.sequence;
      if (TERMINAL_RUN_EVENTS.has(e.type)) terminal = true;
    }
    yield batch;
    if (terminal) return;
  }
}
