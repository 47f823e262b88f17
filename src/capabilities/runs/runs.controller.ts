import { createHash } from 'node:crypto';
import { PageQuery } from '../../platform/pagination/page-query';
import { Body, Controller, Get, HttpCode, Logger, Param, Post, Query, Req, Res } from '@nestjs/common';
import { ApiBody, ApiCreatedResponse, ApiHeader, ApiOkResponse, ApiOperation, ApiParam, ApiProperty, ApiPropertyOptional, ApiResponse, ApiTags } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { ArrayMaxSize, ArrayMinSize, IsArray, IsIn, IsInt, IsObject, IsOptional, IsString, IsUrl, Max, MaxLength, Min, MinLength, ValidateIf } from 'class-validator';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { DomainError, NotFoundError, ValidationError } from '../../platform/errors/domain-error';
import { IdempotencyStore, REPLAY_HEADER } from '../../platform/idempotency/idempotency-store.service';
import { EventLogService, RunEventView } from '../../platform/events/event-log.service';
import { CurrentPrincipal, Scopes } from '../../platform/identity/decorators';
import type { Principal } from '../../platform/identity/principal';
import { ApiErrors } from '../../platform/openapi/api-errors.decorator';
import { protocolSchemaRef } from '../../platform/openapi/protocol-schemas';
import { followRunEvents } from './run-event-follower';
import { admits, FORCE_FLUSH_EVENTS, MAX_BUFFER_MS, parseStreamModes, triggersSnapshot } from './stream-modes';
import { BulkCancelResult, RUN_STATUSES, RunDefinitionView, RunPage, RunSnapshot, RunsService } from './runs.service';
import { FORK_MODES, ForkMode, MAX_DIFF_EVENTS, RunDiff, RunForkService } from './run-fork.service';

export class CreateRunBody {
  @ApiProperty({ minLength: 1, maxLength: 256, description: 'A chain installed for your tenant (`chainId` or `workflow:<chainId>`), or a conformance fixture while the test seams are on. Required unless `mode` is given.' })
  @ValidateIf((o: CreateRunBody) => o.mode === undefined || o.workflowId !== undefined)
  @IsString()
  @MinLength(1)
  @MaxLength(256)
  workflowId: string;

  @ApiPropertyOptional({ type: 'object', additionalProperties: true, description: 'Run inputs, readable by node configs as `{{inputs.<name>}}`.' })
  @IsOptional()
  @IsObject()
  inputs?: Record<string, unknown>;

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: true,
    properties: {
      runTimeoutMs: { type: 'integer', minimum: 1, description: 'RFC 0058: wall-clock deadline of the run in ms, at most `limits.maxRunDurationMs` of /.well-known/openwop (default 604800000); a run past it fails with run_timeout.' },
      maxLoopIterations: { type: 'integer', minimum: 1, description: 'RFC 0058: most node executions of the run, at most `limits.maxLoopIterations` (default 100); past it the run fails with loop_limit_exceeded.' },
      recursionLimit: { type: 'integer', minimum: 1, description: 'Alias of maxLoopIterations (RunOptions reserved key), used when maxLoopIterations is absent; same bound.' },
      maxCostUsd: { type: 'number', minimum: 0, description: 'RFC 0058/0084: most accumulated cost of the run in USD, at most `limits.maxBudgetCostUsd` (default 100).' },
    },
    description:
      'RunOptions.configurable: a per-run overlay, stored and returned on the run. The RFC 0058 bounds below are checked against the host limits advertised at /.well-known/openwop (a value outside them is 400 validation_error); other keys are kept as given.',
  })
  @IsOptional()
  @IsObject()
  configurable?: Record<string, unknown>;

  @ApiPropertyOptional({ type: [String], maxItems: 100 })
  @IsOptional()
  @ArrayMaxSize(100)
  @IsString({ each: true })
  @MinLength(1, { each: true })
  @MaxLength(256, { each: true })
  tags?: string[];

  @ApiPropertyOptional({ type: 'object', additionalProperties: true })
  @IsOptional()
  @IsObject()
  metadata?: Record<string, unknown>;

  @ApiPropertyOptional({ description: 'Defaults to the credential’s tenant; another tenant is 403.' })
  @IsOptional()
  @IsString()
  @MaxLength(256)
  tenantId?: string;

  @ApiPropertyOptional({ minLength: 1, maxLength: 256, description: 'Opaque correlation id. With `X-Dedup: enforce`, a second run of the scope while one is active is 409 `run_already_active`.' })
  @IsOptional()
  @IsString()
  @MinLength(1)
  @MaxLength(256)
  scopeId?: string;

  @ApiPropertyOptional({ format: 'uri', maxLength: 2048, description: 'Signed-token HITL callback URL (interrupt.md), kept with the run.' })
  @IsOptional()
  @IsString()
  @MaxLength(2048)
  @IsUrl({ require_protocol: true, require_tld: false, protocols: ['http', 'https'] })
  callbackUrl?: string;

  @ApiPropertyOptional({ type: 'object', additionalProperties: true, description: 'RFC 0129 data-residency constraint. This host advertises no `dataResidency`: 422 `residency_unavailable`, no run.' })
  @IsOptional()
  @IsObject()
  residency?: Record<string, unknown>;

  @ApiPropertyOptional({ enum: ['eval'], description: 'RFC 0081 eval-suite run. This host advertises no `agents.evalSuite`: 501 `capability_not_provided`.' })
  @IsOptional()
  @IsIn(['eval'])
  mode?: string;

  @ApiPropertyOptional({ minLength: 1, maxLength: 2048, description: 'RFC 0081: the eval suite (with `mode: "eval"`).' })
  @IsOptional()
  @IsString()
  @MinLength(1)
  @MaxLength(2048)
  evalSuiteRef?: string;

  @ApiPropertyOptional({ minLength: 1, maxLength: 256, description: 'RFC 0081: the agent the eval suite targets (with `mode: "eval"`).' })
  @IsOptional()
  @IsString()
  @MinLength(1)
  @MaxLength(256)
  agentId?: string;
}

export class CancelRunBody {
  @ApiPropertyOptional({ maxLength: 500, description: 'Why the run is cancelled (recorded on run.cancelled).' })
  @IsOptional()
  @IsString()
  @MaxLength(500)
  reason?: string;
}

/** The most run ids one `POST /v1/runs:bulk-cancel` takes (rest-endpoints.md recommends 100). */
export const MAX_BULK_CANCEL_RUN_IDS = 100;

export class BulkCancelBody {
  @ApiProperty({ type: [String], minItems: 1, maxItems: MAX_BULK_CANCEL_RUN_IDS, description: `1 to ${MAX_BULK_CANCEL_RUN_IDS} run ids; more is 400 validation_error with details.maxRunIds.` })
  @IsArray()
  @ArrayMinSize(1)
  @IsString({ each: true })
  @MinLength(1, { each: true })
  @MaxLength(128, { each: true })
  runIds: string[];

  @ApiPropertyOptional({ maxLength: 512, description: 'Why the runs are cancelled (recorded on each run.cancelled).' })
  @IsOptional()
  @IsString()
  @MaxLength(512)
  reason?: string;
}

/**
 * The run ids of a validated bulk-cancel body, refused past the cap with `details.maxRunIds` (the
 * conformance suite reads it, so the cap is checked here rather than as a DTO constraint). Shared
 * by the REST route and gRPC BulkCancelRuns.
 */
export function bulkCancelRunIds(body: BulkCancelBody): string[] {
  if (body.runIds.length > MAX_BULK_CANCEL_RUN_IDS) {
    throw new ValidationError(`Send at most ${MAX_BULK_CANCEL_RUN_IDS} run ids per request.`, { field: 'runIds', maxRunIds: MAX_BULK_CANCEL_RUN_IDS });
  }
  return body.runIds;
}

export const DRAIN_POLICIES = ['immediate', 'drain-current-node'] as const;

export class RunControlBody {
  @ApiPropertyOptional({ maxLength: 500, description: 'Why (recorded on run.paused / run.resumed).' })
  @IsOptional()
  @IsString()
  @MaxLength(500)
  reason?: string;

  @ApiPropertyOptional({ enum: DRAIN_POLICIES, default: 'drain-current-node', description: '`:pause` only. `immediate` aborts the nodes in flight (they run again on resume); `drain-current-node` lets them finish first.' })
  @IsOptional()
  @IsIn(DRAIN_POLICIES as unknown as string[])
  drainPolicy?: (typeof DRAIN_POLICIES)[number];
}

export class ForkRunBody {
  @ApiPropertyOptional({ type: 'integer', minimum: 0, description: 'Events with a sequence below it are fixed history (copied; the nodes they completed keep their recorded outputs); the rest is executed again. `0` (the default for `replay`): everything. Required for `branch`. Past the source\'s last sequence: 422.' })
  @IsOptional()
  @IsInt()
  @Min(0)
  fromSeq?: number;

  @ApiProperty({ enum: FORK_MODES, description: '`replay`: deterministic re-execution (no overlay); `branch`: a new execution, with an optional RunOptions overlay.' })
  @IsIn(FORK_MODES as unknown as string[])
  mode: ForkMode;

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: false,
    properties: {
      configurable: { type: 'object', additionalProperties: true, description: 'Merged over the source\'s configurable; the RFC 0058 bounds are checked as on POST /v1/runs.' },
      tags: { type: 'array', items: { type: 'string' }, maxItems: 100, description: 'Replace the source\'s tags.' },
      metadata: { type: 'object', additionalProperties: true, description: 'Merged over the source\'s metadata.' },
    },
    description: '`branch` only: RunOptions to overlay. A non-empty overlay on `replay` is 400.',
  })
  @IsOptional()
  @IsObject()
  runOptionsOverlay?: Record<string, unknown>;
}

export class RunDiffQuery {
  @ApiProperty({ minLength: 1, maxLength: 128, description: 'The run to compare with (b).' })
  @IsString()
  @MinLength(1)
  @MaxLength(128)
  against: string;
}

/** The reason of a validated `:resume` body, which takes no drainPolicy (REST route and gRPC ResumeRun). */
export function resumeReason(body: RunControlBody | undefined): string | undefined {
  if (body?.drainPolicy !== undefined) throw new ValidationError('drainPolicy applies to :pause only.', { field: 'drainPolicy' });
  return body?.reason;
}

export class RunListQuery extends PageQuery {
  @ApiPropertyOptional({ enum: RUN_STATUSES })
  @IsOptional()
  @IsIn(RUN_STATUSES as unknown as string[])
  status?: string;
}

export class RunEventsQuery {
  @ApiPropertyOptional({ type: 'integer', minimum: 0, description: 'Resume after this sequence (the `Last-Event-ID` header wins).' })
  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(0)
  lastSequence?: number;

  @ApiPropertyOptional({
    type: 'string',
    default: 'updates',
    pattern: '^(values|updates|messages|debug)(,(values|updates|messages|debug))*$',
    description: 'One of `values`, `updates` (default), `messages`, `debug`, or a comma-separated union of them; `values` combines with nothing. Anything else is 400 `unsupported_stream_mode` with `details.supported`.',
  })
  @IsOptional()
  @IsString()
  @MaxLength(200)
  streamMode?: string;

  @ApiPropertyOptional({ type: 'integer', minimum: 0, maximum: MAX_BUFFER_MS, description: 'Batch events for up to this many ms into `event: batch` frames (a JSON array of events); 0 or absent: one frame per event. Terminal events and `node.suspended` flush at once.' })
  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(0)
  @Max(MAX_BUFFER_MS)
  bufferMs?: number;
}

const SNAPSHOT = { schema: protocolSchemaRef('RunSnapshot') };
/** The 201 of POST /v1/runs: the RunSnapshot as created plus the run's URLs (rest-endpoints.md). */
const CREATED = {
  schema: {
    allOf: [
      protocolSchemaRef('RunSnapshot'),
      {
        type: 'object',
        required: ['runId', 'status', 'eventsUrl', 'statusUrl'],
        properties: {
          eventsUrl: { type: 'string', format: 'uri', description: 'The run\'s SSE event stream (GET /v1/runs/{runId}/events).' },
          statusUrl: { type: 'string', format: 'uri', description: 'The run (GET /v1/runs/{runId}).' },
        },
      },
    ],
  },
  headers: { 'openwop-idempotent-replay': { schema: { type: 'boolean' }, description: 'With an Idempotency-Key: `true` when the answer is the one recorded for an earlier request with the key, else `false`.' } },
};
const REPLAY = { 'openwop-idempotent-replay': { schema: { type: 'boolean' }, description: 'With an Idempotency-Key: `true` when the answer is the recorded one of an earlier request with the key.' } };
const PAGE_SCHEMA = {
  type: 'object',
  required: ['runs', 'nextCursor'],
  properties: { runs: { type: 'array', items: protocolSchemaRef('RunSnapshot') }, nextCursor: { type: 'string', nullable: true, description: 'Cursor of the next page; null on the last page.' } },
};
const DEFINITION_SCHEMA = {
  type: 'object',
  required: ['runId', 'workflowId', 'nodes', 'edges'],
  properties: {
    runId: { type: 'string' },
    workflowId: { type: 'string' },
    nodes: {
      type: 'array',
      description: 'The nodes in topological order.',
      items: {
        type: 'object',
        required: ['id', 'typeId', 'config'],
        properties: { id: { type: 'string' }, typeId: { type: 'string' }, config: { type: 'object', additionalProperties: true } },
      },
    },
    edges: {
      type: 'array',
      items: {
        type: 'object',
        required: ['from', 'to'],
        properties: { from: { type: 'string' }, to: { type: 'string' }, fromPort: { type: 'string' }, toPort: { type: 'string' } },
      },
    },
  },
};
/** The absolute base URL of the request (the run URLs of a 201 are under it). */
function baseUrl(req: FastifyRequest): string {
  const host = req.headers.host;
  if (!host || !/^[A-Za-z0-9.:\[\]-]{1,300}$/.test(host)) return '';
  return `${req.protocol === 'https' ? 'https' : 'http'}://${host}`;
}

const FORK_SCHEMA = {
  type: 'object',
  required: ['runId', 'sourceRunId', 'fromSeq', 'mode', 'status', 'eventsUrl'],
  properties: {
    runId: { type: 'string', description: 'The new run.' },
    sourceRunId: { type: 'string' },
    fromSeq: { type: 'integer', minimum: 0 },
    mode: { type: 'string', enum: [...FORK_MODES] },
    status: { type: 'string', description: '`pending`, or `running` when the inherited history holds `run.started`.' },
    eventsUrl: { type: 'string', format: 'uri' },
    statusUrl: { type: 'string', format: 'uri' },
  },
};
const DIFF_EVENT = { type: 'object', additionalProperties: true, description: 'A RunEvent (run-event.schema.json).' };
const DIFF_SCHEMA = {
  type: 'object',
  required: ['a', 'b', 'eventDiffs', 'stateDiff'],
  additionalProperties: false,
  properties: {
    a: { type: 'string', description: 'The {runId} run.' },
    b: { type: 'string', description: 'The `against` run.' },
    divergedAtSeq: { type: 'integer', minimum: 0, nullable: true, description: 'The first sequence at which the logs differ; null when they are identical.' },
    eventDiffs: {
      type: 'array',
      items: {
        type: 'object',
        required: ['seq', 'op'],
        additionalProperties: false,
        properties: { seq: { type: 'integer', minimum: 0 }, op: { type: 'string', enum: ['added', 'removed', 'changed'] }, aEvent: DIFF_EVENT, bEvent: DIFF_EVENT },
      },
    },
    stateDiff: { type: 'object', additionalProperties: true, description: 'The state fields that differ (`status`, `variables`, `outputs`, `error`), each as `{a, b}`.' },
    truncated: { type: 'boolean', description: `Present (true) when a run is still in flight or has more than ${MAX_DIFF_EVENTS} events: only a prefix was compared.` },
  },
};

const RUN_CONTROL_SCHEMA = {
  type: 'object',
  required: ['runId', 'status'],
  properties: { runId: { type: 'string' }, status: { type: 'string', enum: ['paused', 'running'] }, pausedAt: { type: 'string', format: 'date-time' }, resumedAt: { type: 'string', format: 'date-time' } },
};
const BULK_CANCEL_SCHEMA = {
  type: 'object',
  required: ['results'],
  properties: {
    results: {
      type: 'array',
      items: {
        type: 'object',
        required: ['runId', 'ok'],
        properties: {
          runId: { type: 'string' },
          ok: { type: 'boolean' },
          status: { type: 'string', enum: ['cancelling', 'cancelled'] },
          error: {
            type: 'object',
            required: ['code', 'message'],
            properties: { code: { type: 'string', description: 'not_found, run_terminal, run_not_cancellable' }, message: { type: 'string' }, details: { type: 'object', additionalProperties: true } },
          },
        },
      },
    },
  },
};
/** If-None-Match's weak comparison (RFC 9110 §13.1.2): `*`, or any listed tag equal to ours ignoring `W/`. */
function etagMatches(header: string, tag: string): boolean {
  const bare = (t: string) => t.trim().replace(/^W\//, '');
  return header.split(',').some((t) => t.trim() === '*' || bare(t) === tag);
}

/** A single-valued request header (a repeated one is malformed). */
function header(req: FastifyRequest, name: string): string | undefined {
  const v = req.headers[name];
  if (Array.isArray(v)) throw new ValidationError(`Send one ${name} header.`, { header: name });
  return v;
}

/**
 * The v1 run lifecycle: start a run of a chain, read it, list, cancel, and follow its events (SSE
 * with `Last-Event-ID` resume; the long-poll route is the platform's events controller).
 */
@ApiTags('runs')
@Controller()
export class RunsController {
  private readonly log = new Logger('runs.sse');

  constructor(
    private readonly runs: RunsService,
    private readonly events: EventLogService,
    private readonly idempotency: IdempotencyStore,
    private readonly forks: RunForkService,
  ) {}

  @Scopes('runs:create')
  @Post('/v1/runs')
  @HttpCode(201)
  @ApiOperation({ operationId: 'createRun', summary: 'Start a run of a workflow chain (201; honours Idempotency-Key)' })
  @ApiHeader({
    name: 'Idempotency-Key',
    required: false,
    description: 'Same key + same body: the first answer again (201, `openwop-idempotent-replay: true`); same key + another body: 409 idempotency_key_mismatch; while the first is in flight: waits up to `limits.idempotencyAckTimeoutSec`, then 409 idempotency_in_flight.',
  })
  @ApiHeader({ name: 'X-Dedup', required: false, enum: ['enforce'], description: '`enforce`: 409 run_already_active (with Retry-After) while a run of the body\'s `scopeId` is active.' })
  @ApiHeader({ name: 'X-Force-Engine-Version', required: false, description: 'Test keys only; this host has none: 403 force_engine_version_forbidden.' })
  @ApiBody({ type: CreateRunBody })
  @ApiCreatedResponse(CREATED)
  @ApiErrors(400, 401, 403, 404, 409, 422, 501)
  async create(@CurrentPrincipal() p: Principal, @Body() body: CreateRunBody, @Req() req: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply): Promise<RunSnapshot & { eventsUrl: string; statusUrl: string }> {
    const key = header(req, 'idempotency-key');
    const dedup = header(req, 'x-dedup');
    if (dedup !== undefined && dedup !== 'enforce') throw new ValidationError('X-Dedup must be "enforce".', { header: 'X-Dedup' });
    const force = header(req, 'x-force-engine-version');
    if (force !== undefined) {
      if (!/^\d{1,9}$/.test(force)) throw new ValidationError('X-Force-Engine-Version must be a non-negative integer.', { header: 'X-Force-Engine-Version' });
      throw new DomainError('force_engine_version_forbidden', 403, 'X-Force-Engine-Version is for test keys; this host issues none (capabilities.testing.forceEngineVersionRange is not advertised).', { header: 'X-Force-Engine-Version' });
    }
    const { snapshot, replayed } = await this.runs.create(p, body, key, undefined, undefined, { dedup: dedup === 'enforce' });
    if (key !== undefined) reply.header(REPLAY_HEADER, String(replayed));
    const self = `${baseUrl(req)}/v1/runs/${encodeURIComponent(snapshot.runId)}`;
    return { ...snapshot, eventsUrl: `${self}/events`, statusUrl: self };
  }

  @Scopes('runs:read')
  @Get('/v1/runs')
  @ApiOperation({ operationId: 'listRuns', summary: 'List the runs of your tenant (newest first, cursor-paged)' })
  @ApiOkResponse({ schema: PAGE_SCHEMA })
  @ApiErrors(400, 401, 403)
  list(@CurrentPrincipal() p: Principal, @Query() q: RunListQuery): Promise<RunPage> {
    return this.runs.list(p, q);
  }

  /**
   * The run's snapshot with a strong `ETag` (RFC 0115): the run's latest event sequence and a digest
   * of the snapshot, so it changes with every observable transition (also those without an event,
   * like `cancelling`) and stays while none happens. `If-None-Match` with it answers 304, no body.
   */
  @Scopes('runs:read')
  @Get('/v1/runs/:runId')
  @ApiOperation({ operationId: 'getRun', summary: 'Read a run (unknown and foreign ids are 404; ETag + If-None-Match answers 304)' })
  @ApiParam({ name: 'runId' })
  @ApiHeader({ name: 'If-None-Match', required: false, description: 'RFC 0115: an ETag of an earlier read; 304 Not Modified while it is still current.' })
  @ApiOkResponse({ ...SNAPSHOT, headers: { ETag: { schema: { type: 'string' }, description: 'Strong validator: the latest event sequence and a digest of the snapshot.' } } })
  @ApiResponse({ status: 304, description: 'Not Modified: If-None-Match matched the current ETag. Empty body.' })
  @ApiErrors(401, 403, 404)
  async get(@CurrentPrincipal() p: Principal, @Param('runId') runId: string, @Req() req: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    const condition = req.headers['if-none-match'];
    // The sequence is read first: an event written in between only makes the tag older, never wrong.
    const sequence = await this.events.lastSequence(p, runId);
    const snap = await this.runs.get(p, runId);
    const body = JSON.stringify(snap);
    const tag = `"${sequence}-${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`;
    reply.header('etag', tag);
    if (condition !== undefined && etagMatches(Array.isArray(condition) ? condition.join(',') : condition, tag)) {
      await reply.code(304).send();
      return;
    }
    await reply.code(200).type('application/json; charset=utf-8').send(body);
  }

  @Scopes('runs:read')
  @Get('/v1/runs/:runId/definition')
  @ApiOperation({
    operationId: 'getRunDefinition',
    summary: 'Read the chain a run executes: its nodes and edges as stored when the run was created (unknown and foreign ids are 404)',
  })
  @ApiParam({ name: 'runId' })
  @ApiOkResponse({ schema: DEFINITION_SCHEMA })
  @ApiErrors(401, 403, 404)
  definition(@CurrentPrincipal() p: Principal, @Param('runId') runId: string): Promise<RunDefinitionView> {
    return this.runs.definition(p, runId);
  }

  @Scopes('runs:cancel')
  @Post('/v1/runs/:runId/cancel')
  @HttpCode(200)
  @ApiOperation({ operationId: 'cancelRun', summary: 'Cancel a run (cancelling → cancelled; the node in flight is aborted; a finished run is answered as it is, 200)' })
  @ApiParam({ name: 'runId' })
  @ApiHeader({ name: 'Idempotency-Key', required: false, description: 'Same key + same run and body: the recorded answer again (`openwop-idempotent-replay: true`); another run or body: 409 idempotency_key_mismatch.' })
  @ApiBody({ type: CancelRunBody, required: false })
  @ApiOkResponse({ ...SNAPSHOT, headers: REPLAY, description: 'The run: `cancelling`/`cancelled`, or as it ended when it had already ended (cancel is idempotent).' })
  @ApiErrors(400, 401, 403, 404, 409)
  async cancel(@CurrentPrincipal() p: Principal, @Param('runId') runId: string, @Body() body: CancelRunBody, @Req() req: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply): Promise<RunSnapshot> {
    const key = header(req, 'idempotency-key');
    const answer = await this.idempotency.execute(p, 'POST /v1/runs/{runId}/cancel', key, { runId, reason: body?.reason ?? null }, async () => ({
      status: 200,
      body: (await this.runs.cancel(p, runId, body?.reason)) as unknown as Record<string, unknown>,
    }));
    if (key !== undefined) reply.header(REPLAY_HEADER, String(answer.replayed));
    return answer.body as unknown as RunSnapshot;
  }

  /**
   * `POST /v1/runs/{runId}:pause`: 202 `{runId, status: paused, pausedAt}`, or 409 with
   * `details.runStatus`. The route's run id is one path segment without a colon (the action follows it).
   */
  @Scopes('runs:cancel')
  @Post('/v1/runs/:runId(^[^/:]+)::pause')
  @HttpCode(202)
  @ApiOperation({ operationId: 'pauseRun', summary: 'Pause a run (drainPolicy immediate or drain-current-node); 202, or 409 with details.runStatus' })
  @ApiParam({ name: 'runId', description: 'The run to pause.' })
  @ApiHeader({ name: 'Idempotency-Key', required: false, description: 'Repeating the first pause with its key answers 202 again instead of 409.' })
  @ApiBody({ type: RunControlBody, required: false })
  @ApiResponse({ status: 202, schema: RUN_CONTROL_SCHEMA })
  @ApiErrors(400, 401, 403, 404, 409)
  async pause(@CurrentPrincipal() p: Principal, @Param('runId') runId: string, @Body() body: RunControlBody, @Req() req: FastifyRequest): Promise<Record<string, unknown>> {
    return { ...(await this.runs.pause(p, runId, body ?? {}, header(req, 'idempotency-key'))) };
  }

  /** `POST /v1/runs/{runId}:resume`: 202 `{runId, status: running, resumedAt}`, or 409 with `details.runStatus`. */
  @Scopes('runs:cancel')
  @Post('/v1/runs/:runId(^[^/:]+)::resume')
  @HttpCode(202)
  @ApiOperation({ operationId: 'resumeRun', summary: 'Resume a paused run; 202, or 409 with details.runStatus' })
  @ApiParam({ name: 'runId', description: 'The run to resume.' })
  @ApiBody({ type: RunControlBody, required: false })
  @ApiResponse({ status: 202, schema: RUN_CONTROL_SCHEMA })
  @ApiErrors(400, 401, 403, 404, 409)
  async resume(@CurrentPrincipal() p: Principal, @Param('runId') runId: string, @Body() body: RunControlBody): Promise<Record<string, unknown>> {
    return { ...(await this.runs.resume(p, runId, resumeReason(body))) };
  }

  /**
   * `POST /v1/runs/{runId}:fork` (replay.md): 201 with the new run. Reading the source and starting
   * a run are both needed. With an `Idempotency-Key` the first answer is recorded and answered again.
   */
  @Scopes('runs:create', 'runs:read')
  @Post('/v1/runs/:runId(^[^/:]+)::fork')
  @HttpCode(201)
  @ApiOperation({ operationId: 'forkRun', summary: 'Fork a run from an event sequence: replay (deterministic) or branch (with a RunOptions overlay); 201 with the new run' })
  @ApiParam({ name: 'runId', description: 'The source run.' })
  @ApiHeader({ name: 'Idempotency-Key', required: false, description: 'Same key + same source and body: the recorded 201 again (`openwop-idempotent-replay: true`); another body: 409 idempotency_key_mismatch.' })
  @ApiBody({ type: ForkRunBody })
  @ApiCreatedResponse({ schema: FORK_SCHEMA, headers: REPLAY })
  @ApiErrors(400, 401, 403, 404, 409, 422)
  async fork(@CurrentPrincipal() p: Principal, @Param('runId') runId: string, @Body() body: ForkRunBody, @Req() req: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply): Promise<Record<string, unknown>> {
    const key = header(req, 'idempotency-key');
    const answer = await this.idempotency.execute(p, 'POST /v1/runs/{runId}:fork', key, { runId, ...body }, async () => {
      const { answer: a } = await this.forks.fork(p, runId, body);
      const self = `${baseUrl(req)}/v1/runs/${encodeURIComponent(a.runId)}`;
      return { status: 201, body: { ...a, eventsUrl: `${self}/events`, statusUrl: self } as Record<string, unknown> };
    });
    if (key !== undefined) reply.header(REPLAY_HEADER, String(answer.replayed));
    return answer.body;
  }

  /** `GET /v1/runs/{runId}:diff?against=` (RFC 0054): the two runs' logs and states compared. */
  @Scopes('runs:read')
  @Get('/v1/runs/:runId(^[^/:]+)::diff')
  @ApiOperation({ operationId: 'diffRuns', summary: 'Compare two runs: their event logs sequence by sequence (type, node, payload) and their states' })
  @ApiParam({ name: 'runId', description: 'Run a.' })
  @ApiOkResponse({ schema: DIFF_SCHEMA })
  @ApiErrors(400, 401, 403, 404)
  diff(@CurrentPrincipal() p: Principal, @Param('runId') runId: string, @Query() q: RunDiffQuery): Promise<RunDiff> {
    return this.forks.diff(p, runId, q.against);
  }

  /**
   * Cancels many runs in one request. Always 200 once the request is well formed: each id's outcome
   * is its own entry of `results`, in request order.
   */
  @Scopes('runs:cancel')
  @Post('/v1/runs::bulk-cancel')
  @HttpCode(200)
  @ApiOperation({ operationId: 'bulkCancelRuns', summary: `Cancel up to ${MAX_BULK_CANCEL_RUN_IDS} runs; per-id results in request order (unknown and foreign ids: not_found)` })
  @ApiBody({ type: BulkCancelBody })
  @ApiOkResponse({ schema: BULK_CANCEL_SCHEMA })
  @ApiErrors(400, 401, 403)
  async bulkCancel(@CurrentPrincipal() p: Principal, @Body() body: BulkCancelBody): Promise<{ results: BulkCancelResult[] }> {
    return { results: await this.runs.bulkCancel(p, bulkCancelRunIds(body), body.reason) };
  }

  /**
   * Server-sent events: the events of the run after `Last-Event-ID` (or `lastSequence`) that the
   * `streamMode` admits, as `id: <sequence>`, `event: <type>`, `data: <RunEvent JSON>`; `values`
   * sends `event: state.snapshot` frames (the RunSnapshot after each transition, a baseline first on
   * resume); `bufferMs` batches frames into `event: batch` (data: a JSON array, id: its highest
   * sequence). The stream ends after the terminal run event.
   */
  @Scopes('runs:read')
  @Get('/v1/runs/:runId/events')
  @ApiOperation({ operationId: 'streamRunEvents', summary: 'Stream the events of a run (SSE; stream modes, bufferMs batching, Last-Event-ID resume)' })
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
    // 404 before the stream opens; following needs only the run's status (snapshots are read as they are sent).
    const snap = await this.runs.state(p, runId);
    const after = lastEventId !== undefined ? Number(lastEventId) : (q.lastSequence ?? 0);
    const values = modes[0] === 'values';
    // `values` frames are snapshots, not events: they are never batched (the hint may be ignored).
    const bufferMs = values ? 0 : (q.bufferMs ?? 0);
    reply.hijack();
    const raw = reply.raw;
    raw.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive', 'x-accel-buffering': 'no' });
    raw.flushHeaders();
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
    const frame = (id: number | undefined, event: string, data: unknown) => `${id !== undefined ? `id: ${id}\n` : ''}event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
    // bufferMs: admitted events wait here until the window ends or a forced-flush event arrives.
    let pending: RunEventView[] = [];
    let timer: NodeJS.Timeout | undefined;
    const flush = async () => {
      clearTimeout(timer);
      timer = undefined;
      if (!pending.length) return;
      const out = pending;
      pending = [];
      await send(frame(out[out.length - 1].sequence, 'batch', out));
    };
    const deliver = async (e: RunEventView) => {
      if (!bufferMs) return send(frame(e.sequence, e.type, e));
      pending.push(e);
      if (FORCE_FLUSH_EVENTS.has(e.type)) return flush();
      if (!timer) timer = setTimeout(() => void flush().catch(() => undefined), bufferMs);
    };
    let lastBeat = Date.now();
    try {
      // Resuming a `values` stream starts from a baseline snapshot.
      if (values && after > 0) await send(frame(undefined, 'state.snapshot', await this.runs.get(p, runId)));
      for await (const batch of followRunEvents(this.events, p, snap, after, { waitMs: 5000, closed: () => closed })) {
        if (values) {
          // One snapshot after the transitions of each batch, read once they are in the log.
          if (batch.some((e) => triggersSnapshot(e.type)) && !closed) await send(frame(batch[batch.length - 1].sequence, 'state.snapshot', await this.runs.get(p, runId)));
        } else {
          for (const e of batch) {
            if (closed) break;
            if (admits(modes, e.type)) await deliver(e);
          }
        }
        if (Date.now() - lastBeat > 15_000) {
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
      raw.end();
    }
  }
}
