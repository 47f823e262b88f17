import { Body, Controller, HttpCode, Post } from '@nestjs/common';
import { ApiBody, ApiOkResponse, ApiOperation, ApiProperty, ApiPropertyOptional, ApiTags } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsBoolean, IsIn, IsInt, IsOptional, IsString, Matches, Max, MaxLength, Min, MinLength, ValidateNested } from '../../../platform/http/dto-validation';
import { DataSource } from 'typeorm';
import { NotFoundError, ValidationError } from '../../../platform/errors/domain-error';
import { EventLogService } from '../../../platform/events/event-log.service';
import { CurrentPrincipal, Scopes, TestSeam } from '../../../platform/identity/decorators';
import type { Principal } from '../../../platform/identity/principal';
import { ActivityLedger } from '../../../platform/idempotency/activity-ledger.service';
import { ApiErrors } from '../../../platform/openapi/api-errors.decorator';
import { RunForkService } from '../replay/run-fork.service';
import { RunCreationService } from '../run-creation.service';
import { findRun } from '../run-snapshot';
import { settledStatus } from '../seams/settled-status';
import { COMPENSATION_MAX_NODES, compensationFixtureId, INVERSE_MAX_ATTEMPTS } from './compensation-fixtures';
import { sampleDownstream } from './compensation-sample.executors';
import type { Plan } from './compensation-store';
import { COMPENSATE_SCOPE, CompensationService, OPERATOR_ACTIONS, OperatorAction } from './compensation.service';

class UnwindBody {
  @ApiPropertyOptional({ minimum: 1, maximum: COMPENSATION_MAX_NODES, default: 2, description: 'Forward nodes that commit a sample charge, each declaring its refund as inverse action.' })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(COMPENSATION_MAX_NODES)
  nodes?: number;

  @ApiPropertyOptional({ default: true, description: 'false: the same workflow without its failing node (it completes; nothing is unwound).' })
  @IsOptional()
  @IsBoolean()
  fail?: boolean;

  @ApiPropertyOptional({ minimum: 0, maximum: INVERSE_MAX_ATTEMPTS - 1, description: 'The first inverse action fails this many attempts (transiently) before it succeeds.' })
  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(INVERSE_MAX_ATTEMPTS - 1)
  failFirstInverseAttempts?: number;

  @ApiPropertyOptional({ description: 'The first inverse action exhausts its attempts and the plan is held for an operator (manual).' })
  @IsOptional()
  @IsBoolean()
  hold?: boolean;
}

class ReplayBody {
  @ApiPropertyOptional({ minimum: 1, maximum: COMPENSATION_MAX_NODES, default: 2 })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(COMPENSATION_MAX_NODES)
  nodes?: number;
}

class OperatorActor {
  @ApiProperty({ description: "The actor's tenant: `default` (the suite's name for its own tenant) or the caller's tenant id; any other tenant is another tenant's actor." })
  @IsString()
  @MinLength(1)
  @MaxLength(200)
  tenantId: string;

  @ApiProperty({ description: 'The acting principal (an opaque id of the caller\'s tenant).' })
  @IsString()
  @Matches(/^[A-Za-z0-9._:@-]{1,200}$/, { message: 'principalId must be 1 to 200 characters of A-Z a-z 0-9 . _ : @ -' })
  principalId: string;

  @ApiProperty({ description: `Whether the seam lets the actor hold operator authority (${COMPENSATE_SCOPE}) in its tenant.` })
  @IsBoolean()
  operator: boolean;
}

class OperatorBody {
  @ApiProperty()
  @IsString()
  @MaxLength(100)
  runId: string;

  @ApiProperty({ enum: OPERATOR_ACTIONS })
  @IsIn(OPERATOR_ACTIONS)
  action: OperatorAction;

  @ApiProperty({ type: OperatorActor })
  @ValidateNested()
  @Type(() => OperatorActor)
  actor: OperatorActor;

  @ApiPropertyOptional({ description: 'Required by `skip`: recorded in the audit log, never in an event.' })
  @IsOptional()
  @IsString()
  @MaxLength(1000)
  justification?: string;
}

/** How long a seam waits for the unwind of the run it started to settle (or hold). */
const UNWIND_WAIT_MS = 30_000;

/**
 * The RFC 0151 compensation seams (host-sample-test-seams.md §21), over the real engine: each runs
 * a compensation fixture (compensation-fixtures.ts) as the caller, waits for the run and its unwind,
 * and answers what the plan recorded. `unwind` → `{runId, status, compensationStatus, events
 * (compensation.*), compensatedOrder (forward ordinals in the order their inverse actions ran),
 * inverseActions[{ordinal, nodeId, effectId, attempts, outcome, downstreamKeys, input}]}` where
 * `downstreamKeys` are the idempotency keys the sample downstream received; `replay` forks a finished
 * unwind in `replay` mode and answers both plans and `refiredEffects` (what the replay presented
 * downstream or performed through the ledger); `operator` acts on a held plan as the named actor.
 */
@ApiTags('test-seams')
@Controller()
export class CompensationSeamController {
  constructor(
    private readonly creation: RunCreationService,
    private readonly forks: RunForkService,
    private readonly compensation: CompensationService,
    private readonly events: EventLogService,
    private readonly ledger: ActivityLedger,
    private readonly ds: DataSource,
  ) {}

  @TestSeam()
  @Scopes('runs:create', 'runs:read')
  @Post('/v1/host/sample/test/compensation/unwind')
  @HttpCode(200)
  @ApiOperation({ operationId: 'seamCompensationUnwind', summary: '(test seam) RFC 0151: run a compensable workflow to its failure and unwind; answer the plan' })
  @ApiBody({ type: UnwindBody })
  @ApiOkResponse({ schema: { type: 'object', required: ['runId', 'events', 'compensatedOrder', 'inverseActions'], additionalProperties: true } })
  @ApiErrors(400, 401, 403)
  async unwind(@CurrentPrincipal() p: Principal, @Body() body: UnwindBody): Promise<Record<string, unknown>> {
    if (body.hold && body.fail === false) throw new ValidationError('hold needs a failing run: fail: false leaves nothing to unwind.', { field: 'hold' });
    if (body.hold && body.failFirstInverseAttempts !== undefined) throw new ValidationError('hold exhausts the first inverse action itself; leave failFirstInverseAttempts out.', { field: 'failFirstInverseAttempts' });
    const variant = body.fail === false ? 'healthy' : body.hold ? 'hold' : 'fail';
    const failFirstInverseAttempts = body.hold ? INVERSE_MAX_ATTEMPTS : (body.failFirstInverseAttempts ?? 0);
    return this.report(p, await this.runToPlan(p, compensationFixtureId(body.nodes ?? 2, variant), failFirstInverseAttempts));
  }

  @TestSeam()
  @Scopes('runs:create', 'runs:read')
  @Post('/v1/host/sample/test/compensation/replay')
  @HttpCode(200)
  @ApiOperation({ operationId: 'seamCompensationReplay', summary: '(test seam) RFC 0151 §F: replay an unwound run; answer both plans and what the replay re-fired' })
  @ApiBody({ type: ReplayBody })
  @ApiOkResponse({ schema: { type: 'object', required: ['runId', 'refiredEffects', 'source', 'replayed'], additionalProperties: true } })
  @ApiErrors(400, 401, 403)
  async replay(@CurrentPrincipal() p: Principal, @Body() body: ReplayBody): Promise<Record<string, unknown>> {
    const source = await this.runToPlan(p, compensationFixtureId(body.nodes ?? 2, 'fail'), 0);
    const fork = await this.forks.fork(p, source.runId, { mode: 'replay' });
    const replayed = await this.runToPlan(p, undefined, 0, fork.answer.runId, fork.snapshot.status);
    const performed = (await this.ledger.invocationsOf(p.tenant, replayed.runId)).length;
    const presented = (replayed.plan?.entries ?? []).reduce((n, e) => n + e.downstreamKeys.length, 0);
    return {
      runId: replayed.runId,
      sourceRunId: source.runId,
      compensationStatus: replayed.plan?.status ?? 'none',
      refiredEffects: performed + presented,
      source: this.actions(source.plan),
      replayed: this.actions(replayed.plan),
    };
  }

  @TestSeam()
  @Scopes('runs:create', 'runs:read')
  @Post('/v1/host/sample/test/compensation/operator')
  @HttpCode(200)
  @ApiOperation({ operationId: 'seamCompensationOperator', summary: '(test seam) RFC 0151 §E: act on a held compensation plan as a named actor (404 other tenant, 403 no authority, 200 audited)' })
  @ApiBody({ type: OperatorBody })
  @ApiOkResponse({ schema: { type: 'object', required: ['runId', 'action', 'audited', 'compensationStatus'], additionalProperties: true } })
  @ApiErrors(400, 401, 403, 404, 409)
  async operator(@CurrentPrincipal() p: Principal, @Body() body: OperatorBody): Promise<Record<string, unknown>> {
    // The seam acts only on the caller's own runs; the actor is then decided against the plan's tenant for real.
    if (!(await findRun(this.ds.manager, p, body.runId))) throw new NotFoundError('No such run.');
    const tenant = body.actor.tenantId === 'default' ? p.tenant : body.actor.tenantId;
    const actor: Principal = { tenant, workspace: p.workspace, principal: body.actor.principalId, scopes: new Set(body.actor.operator ? [COMPENSATE_SCOPE] : []), kind: p.kind };
    return this.compensation.operate(actor, body.runId, body.action, body.justification);
  }

  /** Starts the fixture (or follows the given run), waits for the run, then for its plan to settle or hold. */
  private async runToPlan(p: Principal, workflowId: string | undefined, failFirstInverseAttempts: number, runId?: string, status?: string): Promise<{ runId: string; status: string; plan?: Plan }> {
    if (workflowId) {
      const { snapshot } = await this.creation.create(p, { workflowId, inputs: { failFirstInverseAttempts } });
      runId = snapshot.runId;
      status = snapshot.status;
    }
    status = await settledStatus(this.ds.manager, p, runId!, status!);
    const until = Date.now() + UNWIND_WAIT_MS;
    let plan = await this.compensation.plan(p, runId!);
    while (plan && (plan.status === 'pending' || plan.status === 'running') && Date.now() < until) {
      await new Promise((r) => setTimeout(r, 50));
      plan = await this.compensation.plan(p, runId!);
    }
    return { runId: runId!, status, plan };
  }

  private async report(p: Principal, r: { runId: string; status: string; plan?: Plan }): Promise<Record<string, unknown>> {
    const events = (await this.events.read(p, r.runId)).filter((e) => e.type.startsWith('compensation.')).map((e) => ({ type: e.type, payload: e.payload }));
    const ran = [...(r.plan?.entries ?? [])].sort((a, b) => a.position - b.position).filter((e) => e.attempts > 0);
    return { runId: r.runId, status: r.status, compensationStatus: r.plan?.status ?? 'none', events, compensatedOrder: ran.map((e) => e.ordinal), inverseActions: this.actions(r.plan) };
  }

  private actions(plan: Plan | undefined): Array<Record<string, unknown>> {
    return [...(plan?.entries ?? [])]
      .sort((a, b) => a.position - b.position)
      .map((e) => {
        const chargeId = e.input && typeof e.input === 'object' ? (e.input as Record<string, unknown>).chargeId : undefined;
        return {
          ordinal: e.ordinal,
          nodeId: e.nodeId,
          effectId: e.effectId,
          attempts: e.attempts,
          outcome: e.status,
          // What the sample downstream received (not what the host says it sent).
          downstreamKeys: e.replayedFrom ? e.downstreamKeys : typeof chargeId === 'string' ? sampleDownstream.keys(chargeId, e.effectId) : [],
          input: e.input,
        };
      });
  }
}
