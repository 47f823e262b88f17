import { createHash } from 'node:crypto';
import { Body, Controller, Get, HttpCode, Param, Post, Query, Req, Res } from '@nestjs/common';
import { ApiBody, ApiCreatedResponse, ApiHeader, ApiOkResponse, ApiOperation, ApiParam, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { DomainError, ValidationError } from '../../../platform/errors/domain-error';
import { REPLAY_HEADER } from '../../../platform/idempotency/idempotency-store.service';
import { CurrentPrincipal, Scopes } from '../../../platform/identity/decorators';
import type { Principal } from '../../../platform/identity/principal';
import { ApiErrors } from '../../../platform/openapi/api-errors.decorator';
import { CancelRunBody, CreateRunBody, RunListQuery } from './runs.dto';
import { baseUrl, etagMatches, header, preferredWait } from './runs.http';
import { CREATED, DEFINITION_SCHEMA, PAGE_SCHEMA, REPLAY, SNAPSHOT } from './runs.openapi';
import { RunCreationService } from '../run-creation.service';
import { RunDefinitionView, RunPage, RunSnapshot } from '../run-snapshot';
import { RunsService } from '../runs.service';
import { KeyedRunOperations } from './keyed-run-operations';
import { requestMajor } from '../../../platform/http/protocol-version';

/**
 * The v1 run lifecycle: start a run of a chain, read it, list and cancel it. Run control (pause,
 * resume, fork, diff, bulk cancel) is RunControlController's; following a run's events (SSE with
 * `Last-Event-ID` resume) RunEventsController's; the long-poll route is the platform's events controller.
 */
@ApiTags('runs')
@Controller()
export class RunsController {
  constructor(
    private readonly runs: RunsService,
    private readonly keyed: KeyedRunOperations,
    private readonly creation: RunCreationService,
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
  @ApiHeader({
    name: 'Prefer',
    required: false,
    description:
      '`wait=N` (RFC 7240): answer once the run first stops (completes, fails, is cancelled, or waits on an interrupt, an event or a pause), at most N seconds (capped at 60), with its state then; `Preference-Applied: wait=N` says it was honoured. Not applied to an idempotent replay. Absent, `wait=0` or malformed: answered as soon as the run exists.',
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
    const created = await this.creation.create(p, body, key, undefined, undefined, { dedup: dedup === 'enforce' });
    if (key !== undefined) reply.header(REPLAY_HEADER, String(created.replayed));
    let snapshot = created.snapshot;
    // `Prefer: wait=N`: one request for a client that wants the outcome of a short run. A replay is the
    // first answer again, so it is never waited on.
    const wait = created.replayed ? undefined : preferredWait(req);
    if (wait !== undefined) {
      snapshot = await this.runs.settled(p, snapshot.runId, wait * 1000, { major: requestMajor(req) });
      reply.header('preference-applied', `wait=${wait}`);
    }
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
    // The snapshot and its stream's last sequence, as one statement saw them.
    const { snapshot: snap, lastSequence: sequence } = await this.runs.getWithSequence(p, runId, requestMajor(req));
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
    const answer = await this.keyed.cancel(p, runId, body?.reason, key);
    if (key !== undefined) reply.header(REPLAY_HEADER, String(answer.replayed));
    return answer.body as unknown as RunSnapshot;
  }
}
