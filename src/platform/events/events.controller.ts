import { Controller, Get, HttpCode, Param, Post, Query, Req } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { ApiOkResponse, ApiOperation, ApiParam, ApiPropertyOptional, ApiTags } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsInt, IsOptional, IsString, Max, MaxLength, Min } from '../http/dto-validation';
import { NotFoundError } from '../errors/domain-error';
import { CurrentPrincipal, Scopes, TestSeam } from '../identity/decorators';
import type { Principal } from '../identity/principal';
import { ApiErrors } from '../openapi/api-errors.decorator';
import { protocolSchemaRef } from '../openapi/protocol-schemas';
import { EventLogService, HOST_STREAM, RunEventView } from './event-log.service';
import { RunRecordsPort, type RunView } from '../run-ports/run-records';
import { requestMajor } from '../http/protocol-version';
import { legacySubject } from '../identity/subject';
import { toV2Event } from './v2-events';
import { admits, parseStreamModes, STREAM_MODES, UnsupportedStreamModeError } from './stream-modes';

/** The closed major-2 poll answer. */
interface V2Poll {
  runId: string;
  events: Array<Record<string, unknown>>;
  lastSequence: number;
  status: string;
  isTerminal: boolean;
}

/** Long-poll bounds (rest-endpoints.md: `timeout` 1..60 s, default 30 s). */
const MAX_POLL_TIMEOUT_S = 60;
const DEFAULT_POLL_TIMEOUT_S = 30;

class PollQuery {
  @ApiPropertyOptional({ type: 'integer', minimum: 0, description: 'Return events with a greater sequence (default 0).' })
  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(0)
  lastSequence?: number;

  @ApiPropertyOptional({
    type: 'integer',
    minimum: 0,
    maximum: MAX_POLL_TIMEOUT_S,
    description: `Seconds to wait for the first new event (1 to ${MAX_POLL_TIMEOUT_S}; default ${DEFAULT_POLL_TIMEOUT_S} for a run, 0 for the host stream; 0 answers at once). A finished run answers at once.`,
  })
  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(0)
  @Max(MAX_POLL_TIMEOUT_S)
  timeout?: number;

  @ApiPropertyOptional({
    type: 'string',
    pattern: '^(updates|messages|debug)(,(updates|messages|debug))*$',
    description: `Only the events these modes admit, as the SSE route filters them (${STREAM_MODES.filter((m) => m !== 'values').join(', ')}, or a comma-separated union); absent: every event (as \`debug\`). \`values\` (snapshots) is served over SSE only. Anything else is 400 \`unsupported_stream_mode\`. The cursor (\`lastSequence\`) still moves past the events a mode leaves out.`,
  })
  @IsOptional()
  @IsString()
  @MaxLength(200)
  streamMode?: string;
}

class SeamEventsQuery {
  @ApiPropertyOptional() @IsOptional() @IsString() @MaxLength(200) type?: string;
  @ApiPropertyOptional() @IsOptional() @IsString() @MaxLength(200) correlationId?: string;
  @ApiPropertyOptional() @IsOptional() @IsString() @MaxLength(200) causationId?: string;
  @ApiPropertyOptional() @IsOptional() @IsString() @MaxLength(200) nodeId?: string;
}

const TERMINAL_STATUSES: ReadonlySet<string> = new Set(['completed', 'failed', 'cancelled']);
const TERMINAL_EVENTS: ReadonlySet<string> = new Set(['run.completed', 'run.failed', 'run.cancelled']);
/** The most events one read returns (EventLogService.read). */
const PAGE = 1000;

const POLL_SCHEMA = {
  type: 'object',
  required: ['events', 'isComplete', 'lastSequence'],
  properties: {
    events: { type: 'array', items: protocolSchemaRef('RunEvent') },
    isComplete: { type: 'boolean', description: 'The run is finished and these events reach the end of its log: polling again yields nothing.' },
    lastSequence: { type: 'integer', description: 'The sequence to send as `lastSequence` next.' },
  },
};

const EVENTS_SCHEMA = {
  type: 'object',
  required: ['events'],
  properties: { events: { type: 'array', items: protocolSchemaRef('RunEvent') }, lastSequence: { type: 'integer' } },
};

@ApiTags('runs')
@Controller()
export class EventsController {
  constructor(
    private readonly events: EventLogService,
    private readonly runs: RunRecordsPort,
  ) {}

  /**
   * Long-poll a run's events after `lastSequence`: answers as soon as there is at least one (woken by
   * the append, not by a sleep loop), or with none after `timeout` seconds. A finished run answers at
   * once; `isComplete` says its log has nothing more. The run id `host` reads the tenant's host
   * stream (goal, proposal and import events).
   */
  @Scopes('runs:read')
  @Get('/v1/runs/:runId/events/poll')
  @ApiOperation({ operationId: 'pollRunEvents', summary: 'Long-poll the events of a run (or of the host stream, runId "host")' })
  @ApiParam({ name: 'runId', description: 'A run id, or "host" for the tenant host stream' })
  @ApiOkResponse({ schema: POLL_SCHEMA })
  @ApiErrors(400, 401, 403, 404)
  async poll(@CurrentPrincipal() p: Principal, @Param('runId') runId: string, @Query() q: PollQuery, @Req() req: FastifyRequest): Promise<{ events: RunEventView[]; isComplete: boolean; lastSequence: number } | V2Poll> {
    // Refused before anything is read, like the SSE route's; absent, every event is answered.
    const modes = q.streamMode === undefined ? undefined : parseStreamModes(q.streamMode);
    if (modes?.[0] === 'values') throw new UnsupportedStreamModeError("streamMode 'values' (snapshots) is served over SSE only; the poll answers run events.");
    const admitted = (events: RunEventView[]) => (modes ? events.filter((e) => admits(modes, e.type)) : events);
    const run = runId === HOST_STREAM ? undefined : await this.runs.find(p, runId);
    if (runId !== HOST_STREAM && !run) {
      const any = await this.events.read(p, runId, { limit: 1 });
      if (!any.length) throw new NotFoundError('No such run.');
    }
    const after = q.lastSequence ?? 0;
    // A run finished before the read has all its events in the log (the terminal status and the
    // terminal event commit together): nothing more can come, so there is nothing to wait for.
    const finished = !!run && TERMINAL_STATUSES.has(run.status);
    const timeoutS = q.timeout ?? (run ? DEFAULT_POLL_TIMEOUT_S : 0);
    const events = await this.events.poll(p, runId, after, finished ? 0 : timeoutS * 1000);
    const isComplete = !!run && (finished ? events.length < PAGE : events.some((e) => TERMINAL_EVENTS.has(e.type)));
    if (run && requestMajor(req) === 2) return this.v2Poll(p, run, events, after, admitted);
    return { events: admitted(events), isComplete, lastSequence: events.length ? events[events.length - 1].sequence : after };
  }

  /**
   * The major-2 poll answer (spec v2 events.md §Poll), closed: `{ runId, events, lastSequence,
   * status, isTerminal }`, the events translated (v2-events.ts), `lastSequence` the highest v2
   * sequence of the log (−1 while it is empty), `status` the run's, `isTerminal` whether it ended.
   */
  private async v2Poll(p: Principal, run: RunView, events: RunEventView[], after: number, admitted: (events: RunEventView[]) => RunEventView[]): Promise<V2Poll> {
    const subject = (await this.runs.subjects(p, [run.runId])).get(run.runId) ?? legacySubject(p.tenant, run.owner.principal);
    const owner = { tenant: run.owner.tenant, ...(run.owner.workspace ? { workspace: run.owner.workspace } : {}), subject };
    const last = events.length ? events[events.length - 1].sequence : Math.min(after, await this.events.lastSequence(p, run.runId));
    // The status after these events: a run that ended in them is read again (the first read may predate them).
    const status = events.some((e) => TERMINAL_EVENTS.has(e.type)) && !TERMINAL_STATUSES.has(run.status) ? ((await this.runs.find(p, run.runId))?.status ?? run.status) : run.status;
    return {
      runId: run.runId,
      events: admitted(events).map((e) => toV2Event(e, { tenant: p.tenant, owner })),
      lastSequence: last - 1,
      status,
      isTerminal: TERMINAL_STATUSES.has(status),
    };
  }

  /** Conformance seam: a run's events, filterable; an unknown or foreign run id is an empty list. */
  @TestSeam()
  @Get('/v1/host/sample/test/runs/:runId/events')
  @ApiTags('test-seams')
  @ApiOperation({ operationId: 'seamReadRunEvents', summary: 'Test seam: read the events of a run' })
  @ApiOkResponse({ schema: EVENTS_SCHEMA })
  @ApiErrors(400, 401, 404)
  async seamEvents(@CurrentPrincipal() p: Principal, @Param('runId') runId: string, @Query() q: SeamEventsQuery): Promise<{ events: RunEventView[] }> {
    return { events: await this.events.read(p, runId, q) };
  }

  /** Conformance seam: forget the caller's tenant's event log. */
  @TestSeam()
  @Post('/v1/host/sample/test/reset')
  @HttpCode(200)
  @ApiTags('test-seams')
  @ApiOperation({ operationId: 'seamReset', summary: "Test seam: clear the caller's tenant event log" })
  @ApiOkResponse({ schema: { type: 'object', required: ['reset'], properties: { reset: { type: 'boolean' } } } })
  @ApiErrors(401, 404)
  async reset(@CurrentPrincipal() p: Principal): Promise<{ reset: boolean }> {
    await this.events.purgeTenant(p.tenant);
    return { reset: true };
  }
}
