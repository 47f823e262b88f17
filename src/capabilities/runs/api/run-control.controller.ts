import { Body, Controller, Get, HttpCode, Param, Post, Query, Req, Res } from '@nestjs/common';
import { ApiBody, ApiCreatedResponse, ApiHeader, ApiOkResponse, ApiOperation, ApiParam, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { DataSource } from 'typeorm';
import { HOST_NAME } from '../../../platform/discovery/discovery.service';
import { NotFoundError } from '../../../platform/errors/domain-error';
import { REPLAY_HEADER } from '../../../platform/idempotency/idempotency-store.service';
import { EventLogService } from '../../../platform/events/event-log.service';
import { v2EventType } from '../../../platform/events/v2-events';
import { requestMajor } from '../../../platform/http/protocol-version';
import { CurrentPrincipal, Scopes } from '../../../platform/identity/decorators';
import type { Principal } from '../../../platform/identity/principal';
import { ApiErrors } from '../../../platform/openapi/api-errors.decorator';
import { RunDiff, RunForkService } from '../replay/run-fork.service';
import { diffClockFields, diffIds, forkAnswerOf, forkBodyOf, unboundRunId } from '../replay/replay-ids';
import { KeyedRunOperations } from './keyed-run-operations';
import { RunAncestry, runAncestry } from './run-ancestry';
import { BulkCancelBody, bulkCancelRunIds, ForkRunBody, MAX_BULK_CANCEL_RUN_IDS, resumeReason, RunControlBody, RunDiffQuery } from './runs.dto';
import { baseUrl, header } from './runs.http';
import { ANCESTRY_SCHEMA, BULK_CANCEL_SCHEMA, DIFF_SCHEMA, FORK_SCHEMA, REPLAY, RUN_CONTROL_SCHEMA } from './runs.openapi';
import { BulkCancelResult, RunControlService } from '../run-control.service';

/**
 * Operator control of runs: pause and resume, fork (replay or branch from an event sequence), diff
 * two runs, and cancel many at once. Its routes follow RunsController's in the OpenAPI document
 * (RunsModule registers it right after).
 */
@ApiTags('runs')
@Controller()
export class RunControlController {
  constructor(
    private readonly control: RunControlService,
    private readonly keyed: KeyedRunOperations,
    private readonly forks: RunForkService,
    private readonly events: EventLogService,
    private readonly ds: DataSource,
  ) {}

  /**
   * A major-2 fork copies the source's history below `fromSeq` (stored numbering) into a log a v2
   * reader translates: a row of a type the codemap cannot translate refuses the fork with the read's
   * own `500 event_type_unmapped` (persistence.md §The reader rule binds every reader) instead of
   * copying it into a new log. An unknown or foreign run reads no events: the fork answers as it does.
   */
  private async readableAtMajor2(p: Principal, runId: string, fromSeq: number | undefined): Promise<void> {
    for (let after = 0; ; ) {
      const page = await this.events.read(p, runId, { afterSequence: after, limit: 1000 });
      for (const e of page) if (fromSeq === undefined || e.sequence < fromSeq) v2EventType(e.type);
      if (page.length < 1000 || (fromSeq !== undefined && page[page.length - 1].sequence >= fromSeq)) return;
      after = page[page.length - 1].sequence;
    }
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
    return { ...(await this.control.pause(p, runId, body ?? {}, header(req, 'idempotency-key'))) };
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
    return { ...(await this.control.resume(p, runId, resumeReason(body))) };
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
    // Under major 2 fromSeq counts the log from 0 (replay-ids.ts).
    const forkBody = forkBodyOf(req, body);
    if (requestMajor(req) === 2) await this.readableAtMajor2(p, runId, forkBody.fromSeq);
    const answer = await this.keyed.fork(p, runId, forkBody, key, baseUrl(req));
    if (key !== undefined) reply.header(REPLAY_HEADER, String(answer.replayed));
    return forkAnswerOf(req, answer.body);
  }

  /** `GET /v1/runs/{runId}:diff?against=` (RFC 0054): the two runs' logs and states compared. */
  @Scopes('runs:read')
  @Get('/v1/runs/:runId(^[^/:]+)::diff')
  @ApiOperation({ operationId: 'diffRuns', summary: 'Compare two runs: their event logs sequence by sequence (type, node, payload) and their states' })
  @ApiParam({ name: 'runId', description: 'Run a.' })
  @ApiOkResponse({ schema: DIFF_SCHEMA })
  @ApiErrors(400, 401, 403, 404)
  async diff(@CurrentPrincipal() p: Principal, @Param('runId') runId: string, @Query() q: RunDiffQuery, @Req() req: FastifyRequest): Promise<RunDiff> {
    // Under major 2 `against` is tenant-bound and the answer names both runs bound (replay-ids.ts).
    return diffIds(req, p.tenant, await this.forks.diff(p, runId, unboundRunId(req, p.tenant, q.against), diffClockFields(req)));
  }

  /**
   * `getRunAncestry` (runs.md §Diff and ancestry, RFC 0040 §C): the run's immediate parent, `null`
   * for a run created by `POST /runs` and for a fork (run-ancestry.ts). Served at major 2, where the
   * `multiAgent` record advertises `crossHostCausation.ancestryEndpointSupported`. Major 1 gates the
   * operation on the whole multi-agent execution model (`executionModel.supported`, version 3), which
   * this host does not claim, so `/v1` answers it as the unrouted path it was: 404 `No such route.`.
   */
  @Scopes('runs:read')
  @Get('/v1/runs/:runId/ancestry')
  @ApiOperation({ operationId: 'getRunAncestry', summary: "A run's immediate parent in the composition chain (null for a created run and for a fork); served at protocol major 2" })
  @ApiParam({ name: 'runId', description: 'The run.' })
  @ApiOkResponse({ schema: ANCESTRY_SCHEMA })
  @ApiErrors(401, 403, 404)
  async ancestry(@CurrentPrincipal() p: Principal, @Param('runId') runId: string, @Req() req: FastifyRequest): Promise<RunAncestry> {
    if (requestMajor(req) !== 2) throw new NotFoundError('No such route.');
    const a = await runAncestry(this.ds.manager, p, runId, HOST_NAME);
    // Ids tenant-bound, as every major-2 answer names runs (identity.md §5).
    const bound = (id: string) => `${p.tenant}/${id}`;
    return { ...a, runId: bound(a.runId), parent: a.parent && { ...a.parent, runId: bound(a.parent.runId) } };
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
    return { results: await this.control.bulkCancel(p, bulkCancelRunIds(body), body.reason) };
  }
}
