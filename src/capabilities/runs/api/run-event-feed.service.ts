import { Injectable } from '@nestjs/common';
import { NotFoundError } from '../../../platform/errors/domain-error';
import { EventLogService, RunEventView } from '../../../platform/events/event-log.service';
import type { Principal } from '../../../platform/identity/principal';
import { followRunEvents } from './run-event-follower';
import { admits, parseStreamModes, UnsupportedStreamModeError } from '../../../platform/events/stream-modes';

/** What a transport streaming run events asks for (the REST query's `lastSequence` and `streamMode`). */
export interface RunEventFeedRequest {
  lastSequence?: number;
  streamMode?: string;
}

/**
 * A run's events for a transport that carries run events only (gRPC StreamRunEvents), with the
 * SSE route's rules: `streamMode` parsed and filtered exactly like `GET /v1/runs/{runId}/events`
 * (unknown modes 400 `unsupported_stream_mode`), `values` (snapshots, SSE only) refused, and an
 * unknown or foreign run 404 before anything is sent.
 */
@Injectable()
export class RunEventFeed {
  constructor(private readonly events: EventLogService) {}

  /**
   * Opens the feed of run `runId` after `q.lastSequence`: the refusals are thrown here, then the
   * batches of admitted events follow in sequence order until the terminal event (or until
   * `closed()`), as the SSE route follows them; `stream` names the transport's stream in the refusal of `values`.
   */
  async open(p: Principal, runId: string, q: RunEventFeedRequest, opts: { stream: string; waitMs: number; closed: () => boolean }): Promise<AsyncIterable<RunEventView[]>> {
    const modes = parseStreamModes(q.streamMode);
    if (modes[0] === 'values') throw new UnsupportedStreamModeError(`streamMode 'values' (snapshots) is served over SSE only; ${opts.stream} carries run events.`);
    // NOT_FOUND before the stream sends anything; the run's status comes with its first events.
    const after = q.lastSequence ?? 0;
    const opened = await this.events.openRun(p, runId, after);
    if (!opened) throw new NotFoundError('No such run.');
    const batches = followRunEvents(this.events, p, { runId: opened.runId, status: opened.status }, after, { waitMs: opts.waitMs, closed: opts.closed, first: opened.events, readAt: opened.readAt });
    return (async function* () {
      for await (const batch of batches) yield batch.filter((e) => admits(modes, e.type));
    })();
  }
}
