import { Controller, Get, Logger, Param, Query, Req, Res } from '@nestjs/common';
import { ApiHeader, ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { NotFoundError, ValidationError } from '../../../platform/errors/domain-error';
import { EventLogService, RunEventView } from '../../../platform/events/event-log.service';
import { CurrentPrincipal, Scopes } from '../../../platform/identity/decorators';
import type { Principal } from '../../../platform/identity/principal';
import { ApiErrors } from '../../../platform/openapi/api-errors.decorator';
import { protocolSchemaRef } from '../../../platform/openapi/protocol-schemas';
import { followRunEvents, TERMINAL_RUN_EVENTS } from './run-event-follower';
import { RunEventsQuery } from './runs.dto';
import { header } from './runs.http';
import { RunsService } from '../runs.service';
import { admits, FORCE_FLUSH_EVENTS, parseStreamModes, triggersSnapshot } from '../../../platform/events/stream-modes';
import { bindRunAnswer } from '../../../platform/http/bound-ids';
import { requestMajor } from '../../../platform/http/protocol-version';
import { toV2Snapshot } from '../../../platform/http/v2-run-rendering';
import { toV2Event } from '../../../platform/events/v2-events';
import { legacySubject } from '../../../platform/identity/subject';
import { RunRecordsPort } from '../../../platform/run-ports/run-records';
import type { RunSnapshot } from '../run-snapshot';

/**
 * A client asking for JSON and not for an event stream (`Accept: application/json`) reads the run's
 * logged events at once instead of following them.
 */
function wantsJson(accept: string | undefined): boolean {
  const a = (accept ?? '').toLowerCase();
  return a.includes('application/json') && !a.includes('text/event-stream');
}

/**
 * Following a run's events over SSE, with `Last-Event-ID` resume, stream modes and `bufferMs`
 * batching (the long-poll route is the platform's events controller); a JSON read of them for a
 * client that asks for JSON. Its route follows RunControlController's in the OpenAPI document
 * (RunsModule registers it right after).
 */
@ApiTags('runs')
@Controller()
export class RunEventsController {
  private readonly log = new Logger('runs.sse');

  constructor(
    private readonly runs: RunsService,
    private readonly events: EventLogService,
    private readonly records: RunRecordsPort,
  ) {}

  /**
   * Server-sent events: the events of the run after `Last-Event-ID` (or `lastSequence`) that the
   * `streamMode` admits, as `id: <sequence>`, `event: <type>`, `data: <RunEvent JSON>`; `values`
   * sends `event: state.snapshot` frames (the RunSnapshot after each transition, a baseline first on
   * resume); `bufferMs` batches frames into `event: batch` (data: a JSON array, id: its highest
   * sequence). The stream ends after the terminal run event. With `Accept: application/json` (and
   * not `text/event-stream`) the answer is `{events}` instead: the events logged so far (at most 1000 after
   * `Last-Event-ID` / `lastSequence`), without following: every event, as the long poll answers them, or those a
   * `streamMode` named in the request admits.
   */
  @Scopes('runs:read')
  @Get('/v1/runs/:runId/events')
  @ApiOperation({ operationId: 'streamRunEvents', summary: 'Stream the events of a run (SSE; stream modes, bufferMs batching, Last-Event-ID resume), or read them as JSON' })
  @ApiParam({ name: 'runId' })
  @ApiHeader({ name: 'Last-Event-ID', required: false, description: 'Resume after this event sequence.' })
  @ApiOkResponse({
    description:
      'A Server-Sent Events stream (`text/event-stream`): one message per RunEvent: `id:` its sequence (send it back as Last-Event-ID to resume), `event:` its type and `data:` the RunEvent as JSON (components.schemas.RunEvent); `: keep-alive` comment lines keep the connection open.',
    content: {
      'text/event-stream': {
        schema: { type: 'string', description: 'SSE messages whose `data:` lines are RunEvent JSON objects (components.schemas.RunEvent).' },
        example: 'id: 1\nevent: run.started\ndata: {"eventId":"…","runId":"…","sequence":1,"type":"run.started","payload":{}}\n\n',
      },
      'application/json': {
        schema: { type: 'object', required: ['events'], properties: { events: { type: 'array', items: protocolSchemaRef('RunEvent') } } },
      },
    },
  })
  @ApiErrors(400, 401, 403, 404)
  async stream(
    @CurrentPrincipal() p: Principal,
    @Param('runId') runId: string,
    @Query() q: RunEventsQuery,
    @Req() req: FastifyRequest,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    // Every malformed parameter is refused before the run is looked up and before the stream opens.
    const modes = parseStreamModes(q.streamMode);
    const lastEventId = header(req, 'last-event-id');
    if (lastEventId !== undefined && !/^\d{1,15}$/.test(lastEventId)) throw new ValidationError('Last-Event-ID must be an event sequence.', { header: 'Last-Event-ID' });
    // 404 before the stream opens. Following needs only the run's status (snapshots are read as
    // they are sent), read with the first events in one statement.
    const after = lastEventId !== undefined ? Number(lastEventId) : (q.lastSequence ?? 0);
    const opened = await this.events.openRun(p, runId, after);
    if (!opened) throw new NotFoundError('No such run.');
    // Under major 2 every event is rendered in the v2 vocabulary (and a log it cannot be is refused here, before the stream opens).
    const v2 = requestMajor(req) === 2 ? await this.v2Rendering(p, opened.runId) : undefined;
    const render = (e: RunEventView): unknown => (v2 ? v2.event(e) : e);
    const rendered = opened.events.map(render);
    if (wantsJson(header(req, 'accept'))) {
      // A read of the log, not a stream: the whole log as the long poll answers it, unless a stream mode is named.
      const listed = q.streamMode === undefined ? rendered : rendered.filter((_, i) => admits(modes, opened.events[i].type));
      await reply.status(200).type('application/json; charset=utf-8').send(JSON.stringify({ events: listed }));
      return;
    }
    const snap = { runId: opened.runId, status: opened.status };
    const values = modes[0] === 'values';
    // `values` frames are snapshots, not events: they are never batched (the hint may be ignored).
    const bufferMs = values ? 0 : (q.bufferMs ?? 0);
    reply.hijack();
    const raw = reply.raw;
    raw.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive', 'x-accel-buffering': 'no' });
    // With events to send at once, the headers leave with them (one packet); else the stream opens now.
    if (!opened.events.length || values) raw.flushHeaders();
    let closed = false;
    req.raw.on('close', () => (closed = true));
    raw.on('close', () => (closed = true));
    // A client slower than the run: wait for its socket to drain instead of buffering without bound.
    const drained = () => new Promise<void>((resolve) => {
      const done = () => {
        raw.off('drain', done);
        raw.off('close', done);
        resolve();
      };
      raw.on('drain', done);
      raw.on('close', done);
    });
    const send = async (frame: string) => {
      if (closed) return;
      if (!raw.write(frame) && !closed) await drained();
    };
    // An event frame: `id:` its sequence (from 0 under major 2), `event:` its type, `data:` the event, each as the major renders it.
    const frame = (id: number | undefined, event: string, data: unknown) => `${id !== undefined ? `id: ${v2 ? id - 1 : id}\n` : ''}event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
    const eventFrame = (e: RunEventView) => {
      const r = render(e);
      return frame(e.sequence, v2 ? ((r as { type: string }).type) : e.type, r);
    };
    const snapshotOf = async () => (v2 ? v2.snapshot(await this.runs.get(p, runId)) : this.runs.get(p, runId));
    // bufferMs: admitted events wait here until the window ends or a forced-flush event arrives (deliver).
    let pending: RunEventView[] = [];
    let timer: NodeJS.Timeout | undefined;
    const flush = async () => {
      clearTimeout(timer);
      timer = undefined;
      if (!pending.length) return;
      const out = pending;
      pending = [];
      await send(frame(out[out.length - 1].sequence, 'batch', out.map(render)));
    };
    const deliver = async (e: RunEventView) => {
      pending.push(e);
      if (FORCE_FLUSH_EVENTS.has(e.type)) return flush();
      if (!timer) timer = setTimeout(() => void flush().catch(() => undefined), bufferMs);
    };
    let lastBeat = Date.now();
    let ended = false;
    try {
      // Resuming a `values` stream starts from a baseline snapshot.
      if (values && after > 0) await send(frame(undefined, 'state.snapshot', await snapshotOf()));
      for await (const batch of followRunEvents(this.events, p, snap, after, { waitMs: 5000, closed: () => closed, first: opened.events, readAt: opened.readAt })) {
        if (values) {
          // One snapshot after the transitions of each batch, read once they are in the log.
          if (batch.some((e) => triggersSnapshot(e.type)) && !closed) await send(frame(batch[batch.length - 1].sequence, 'state.snapshot', await snapshotOf()));
        } else if (!bufferMs) {
          // The frames of one batch leave in one write (one packet, not one per event); the last batch
          // ends the stream in the same write.
          const frames = batch.filter((e) => admits(modes, e.type)).map(eventFrame);
          if (batch.some((e) => TERMINAL_RUN_EVENTS.has(e.type)) && !closed) {
            ended = true;
            raw.end(frames.join(''));
          } else if (frames.length) await send(frames.join(''));
        } else {
          for (const e of batch) {
            if (closed) break;
            if (admits(modes, e.type)) await deliver(e);
          }
        }
        if (!ended && Date.now() - lastBeat > 15_000) {
          raw.write(': keep-alive\n\n');
          lastBeat = Date.now();
        }
      }
      await flush();
    } catch (e) {
      // The answer is already streaming: the stream ends here and the client resumes with Last-Event-ID.
      this.log.warn({ msg: 'run event stream ended early', runId: snap.runId, err: (e as Error).message });
    } finally {
      clearTimeout(timer);
      if (!ended) raw.end();
    }
  }

  /**
   * How a major-2 stream renders a run's events and snapshots: v2 events (v2-events.ts, run ids and
   * `run.started`'s owner bound to the caller's tenant) and closed v2 snapshots with their bound ids.
   */
  private async v2Rendering(p: Principal, runId: string): Promise<{ event: (e: RunEventView) => Record<string, unknown>; snapshot: (s: RunSnapshot) => unknown }> {
    const run = await this.records.find(p, runId);
    const subject = (await this.records.subjects(p, [runId])).get(runId) ?? legacySubject(p.tenant, run?.owner.principal);
    const owner = { tenant: run?.owner.tenant ?? p.tenant, ...(run?.owner.workspace ? { workspace: run.owner.workspace } : {}), subject };
    return {
      event: (e) => toV2Event(e, { tenant: p.tenant, owner }),
      snapshot: (s) => bindRunAnswer(toV2Snapshot(s as unknown as Record<string, unknown>, subject), p.tenant),
    };
  }
}
