import { BeforeApplicationShutdown, Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleInit } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { AuditLogService, auditActor } from '../../../platform/audit/audit-log.service';
import { ConflictError, ForbiddenError, NotFoundError, ValidationError } from '../../../platform/errors/domain-error';
import type { BatchEvent } from '../../../platform/events/event-log.service';
import { EventLogService } from '../../../platform/events/event-log.service';
import type { Principal, TenantScope } from '../../../platform/identity/principal';
import { ActivityLedger } from '../../../platform/idempotency/activity-ledger.service';
import { leaseOwnerId } from '../../../platform/leases/lease-owner';
import { RetentionService } from '../../../platform/retention/retention.service';
import { PeriodicTaskService } from '../../../platform/scheduler/periodic-task.service';
import type { LocalTaskHandle } from '../../../platform/scheduler/local-task';
import { NodeExecutorRegistry } from '../engine/node-executor-registry.service';
import { RunEngineService } from '../engine/run-engine.service';
import type { ClaimedRow } from '../engine/run-store';
import { findRun } from '../run-snapshot';
import { RUNS_SETTINGS, RunsSettings } from '../runs.settings';
import { Trigger, UnresolvedReference } from './compensation-declaration';
import { foldSettled, mintEntries, recordedOutputs, replayedEntries } from './compensation-plan';
import { compensationStore, Plan } from './compensation-store';
import { commitPlan, compensationId, executePlan, PlanChanged, UNWIND_LEASE_MS, UnwindDeps } from './compensation-unwind';
import type { PlanEntry, PlanStatus } from './run-compensation.entity';
import { principalSelect } from '../run-principal.entity';

/** The scope of a compensation plan's operator (RFC 0151 §E): retry, skip with justification, terminate. */
export const COMPENSATE_SCOPE = 'runs:compensate';
export const OPERATOR_ACTIONS = ['retry', 'skip', 'terminate'] as const;
export type OperatorAction = (typeof OPERATOR_ACTIONS)[number];
/** How often a replica looks for plans whose unwind stopped with its holder (a crash, a shutdown). */
const RESUME_INTERVAL_MS = 5_000;

/** What the run engine asks of compensation (ExecutionDeps.compensation). */
export interface CompensationHook {
  /**
   * Before the run's terminal write: when the workflow's policy lists `trigger` and a committed node
   * declares an inverse action, persists the plan with its `compensation.requested` (after writing
   * what the execution still had pending, so the completions it reads are all in the log). Answers
   * what starts the unwind once the run's end is written; undefined when nothing is to be unwound.
   */
  mint(row: ClaimedRow, trigger: Trigger, flush: () => Promise<void>): Promise<(() => void) | undefined>;
}

/**
 * RFC 0151 compensation (spec/v1/compensation.md; docs/runs.md §Compensation): plans minted from
 * recorded facts when a declared trigger fires, unwound in reverse completion order after the run
 * ended (compensation-unwind.ts), resumed from the persisted plan by any replica when the unwind
 * stopped with its holder, and acted on by authorized operators (retry, skip, terminate).
 */
@Injectable()
export class CompensationService implements OnModuleInit, OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly log = new Logger('compensation');
  private readonly deps: UnwindDeps;
  private readonly active = new Set<Promise<unknown>>();
  private ticker?: LocalTaskHandle;
  private stopped = false;
  private readonly stopping = new AbortController();

  constructor(
    private readonly ds: DataSource,
    private readonly events: EventLogService,
    private readonly engine: RunEngineService,
    private readonly ledger: ActivityLedger,
    private readonly scheduler: PeriodicTaskService,
    private readonly retention: RetentionService,
    private readonly audit: AuditLogService,
    executors: NodeExecutorRegistry,
    @Inject(RUNS_SETTINGS) settings: RunsSettings,
  ) {
    this.deps = { ds, events, executors, owner: leaseOwnerId(settings.instanceId), signal: this.stopping.signal };
  }

  onModuleInit(): void {
    this.engine.useCompensation({ mint: (row, trigger, flush) => this.mint(row, trigger, flush) });
    this.retention.registerRunPurger({ counts: 'compensationPlans', deletes: (runs) => compensationStore.purgeSql(runs) });
    // A plan still to be executed or held for an operator keeps its run (and its log) for as long as it is.
    this.retention.registerRunKeeper({ name: 'compensation', keeps: (run) => `EXISTS (SELECT 1 FROM "run_compensation" c WHERE c."run_id" = ${run.id} AND c."status" IN ('pending', 'running', 'manual'))` });
  }

  onApplicationBootstrap(): void {
    this.ticker = this.scheduler.every({ name: 'runs.compensation.resume', intervalMs: RESUME_INTERVAL_MS, cadence: 'delay', run: () => this.resumeOrphaned() });
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.stopped = true;
    // Unwinds stop where they are and hand their leases back; another replica (or the next start) resumes them.
    this.stopping.abort();
    await this.ticker?.stop();
    await Promise.allSettled([...this.active]);
  }

  /** The §D rollup of runs of one tenant: `none` for a run without a plan. */
  async statuses(m: EntityManager, tenant: string, runIds: string[]): Promise<Map<string, PlanStatus>> {
    return compensationStore.statuses(m, tenant, runIds);
  }

  /** The plan of a run of the scope (tenant and workspace); undefined for a run without one. */
  plan(scope: TenantScope, runId: string): Promise<Plan | undefined> {
    return compensationStore.get(this.ds.manager, scope, runId);
  }

  async mint(row: ClaimedRow, trigger: Trigger, flush: () => Promise<void>): Promise<(() => void) | undefined> {
    const def = row.definition;
    const policy = def?.compensationPolicy;
    if (!policy || !policy.triggers.includes(trigger) || !def.nodes.some((n) => n.compensation)) return undefined;
    await flush();
    const m = this.ds.manager;
    if (await compensationStore.get(m, { tenant: row.tenant }, row.id)) return () => this.kick(row.id); // a takeover: minted already
    const fork = (row.metadata?.fork ?? undefined) as { sourceRunId?: unknown; mode?: unknown; fromSeq?: unknown } | undefined;
    let entries: PlanEntry[];
    let failedMint = false;
    if (fork?.mode === 'replay' && typeof fork.sourceRunId === 'string') {
      // §F: a replay takes the source's recorded outcomes and re-fires nothing (no source plan: nothing to take).
      const source = await compensationStore.get(m, { tenant: row.tenant }, fork.sourceRunId);
      entries = source ? replayedEntries(source.entries, fork.sourceRunId) : [];
    } else {
      const scope = { tenant: row.tenant, workspace: row.workspace ?? undefined };
      const completions = await this.events.read(scope, row.id, { type: 'node.completed' });
      const forwardEffects = new Map<string, string>();
      for (const i of await this.ledger.invocationsOf(row.tenant, row.id)) if (!forwardEffects.has(i.nodeId)) forwardEffects.set(i.nodeId, i.logicalInvocationId);
      const fromSeq = fork?.mode === 'branch' && typeof fork.fromSeq === 'number' ? fork.fromSeq : undefined;
      const facts = { tenant: row.tenant, runId: row.id, definition: def, inputs: row.inputs ?? {}, completions, forwardEffects, fromSeq };
      try {
        entries = mintEntries(facts, await recordedOutputs(m, row.id), policy);
      } catch (e) {
        if (!(e instanceof UnresolvedReference)) throw e;
        // The mint fails as the plan's own failure, never as an inverse action invoked without its input.
        this.log.warn({ msg: 'a compensation input does not resolve to a recorded fact; the plan failed', runId: row.id, reference: e.reference });
        entries = [];
        failedMint = true;
      }
    }
    if (!failedMint && !entries.some((e) => e.nodeTypeId)) return undefined;
    const base = { compensationId: compensationId(row.id), orderingModel: policy.orderingModel };
    const events: BatchEvent[] = [{ type: 'compensation.requested', payload: base }];
    if (failedMint) events.push({ type: 'compensation.failed', payload: base });
    await this.ds.transaction(async (tx) => {
      const { inserted } = await compensationStore.insert(tx, {
        runId: row.id,
        tenant: row.tenant,
        workspace: row.workspace,
        status: failedMint ? 'failed' : 'pending',
        trigger,
        planVersion: 1,
        profileVersion: policy.profileVersion,
        orderingModel: policy.orderingModel,
        exhaustedDisposition: policy.exhaustedDisposition,
        entries,
      });
      // The plan is durable before `compensation.requested` says so (one transaction).
      if (inserted) await this.events.appendBatch({ tenant: row.tenant, workspace: row.workspace ?? undefined }, row.id, events, tx);
    });
    this.events.wake();
    return failedMint ? undefined : () => this.kick(row.id);
  }

  /** Starts the unwind of a plan in the background (the caller does not wait for it). */
  private kick(runId: string): void {
    if (this.stopped) return;
    const p: Promise<unknown> = this.unwind(runId)
      .catch((e) => this.log.warn({ msg: 'the compensation unwind stopped; another pass resumes it from the plan', runId, err: (e as Error)?.message }))
      .finally(() => this.active.delete(p));
    this.active.add(p);
  }

  /** Executes an active plan nobody else holds, from where its recorded outcomes stand. */
  async unwind(runId: string): Promise<Plan | undefined> {
    const plan = await compensationStore.claim(this.ds.manager, runId, this.deps.owner, UNWIND_LEASE_MS);
    if (!plan) return undefined;
    const rows = (await this.ds.query(`SELECT "principal", (${principalSelect('"run"', 'scopes')}) AS "scopes", "inputs" FROM "run" WHERE "id" = $1 AND "tenant" = $2`, [runId, plan.tenant])) as Array<{ principal: string | null; scopes: string[] | null; inputs: Record<string, unknown> | null }>;
    const run = rows[0];
    try {
      return await executePlan(this.deps, plan, { principal: run?.principal ?? 'system', scopes: run?.scopes ?? [], inputs: run?.inputs ?? {} });
    } catch (e) {
      if (e instanceof PlanChanged) return undefined;
      throw e;
    }
  }

  private async resumeOrphaned(): Promise<void> {
    if (this.stopped) return;
    for (const runId of await compensationStore.orphaned(this.ds.manager, 20)) this.kick(runId);
  }

  /**
   * An operator's action on a held or partial plan (RFC 0151 §E), decided in the plan's tenant: the
   * run must be the actor's (else 404, as for a run that does not exist), the actor must hold
   * `runs:compensate` (else 403). Either way the decision is recorded, bound to the action and the
   * plan version, as `authorization.decided` on the run's log and in the audit log.
   */
  async operate(actor: Principal, runId: string, action: OperatorAction, justification?: string): Promise<{ runId: string; action: OperatorAction; audited: true; planVersion: number; compensationStatus: PlanStatus }> {
    if (action === 'skip' && !justification?.trim()) throw new ValidationError('skip needs a justification.', { field: 'justification' });
    const m = this.ds.manager;
    const plan = (await findRun(m, actor, runId)) ? await compensationStore.get(m, actor, runId) : undefined;
    if (!plan) throw new NotFoundError('No such run with a compensation plan.');
    const allowed = actor.scopes.has(COMPENSATE_SCOPE);
    await this.decided(actor, plan, action, allowed, justification);
    if (!allowed) throw new ForbiddenError(`Acting on a compensation plan needs the ${COMPENSATE_SCOPE} scope in the plan's tenant.`, { requiredScope: COMPENSATE_SCOPE, retriable: false });
    const open = plan.entries.filter((e) => e.status === 'held' || e.status === 'failed');
    if (!['manual', 'partial', 'failed'].includes(plan.status) || !open.length) {
      throw new ConflictError('compensation_not_actionable', `The plan is ${plan.status}: it has no held or failed inverse action to act on.`, { compensationStatus: plan.status });
    }
    if (action === 'terminate') {
      for (const e of plan.entries) if (e.status === 'held' || e.status === 'failed' || e.status === 'pending' || e.status === 'running') Object.assign(e, { status: 'terminated', reason: 'operator-terminated' });
      plan.status = foldSettled(plan.entries);
      await this.commitOrConflict(plan);
    } else {
      for (const e of open) {
        // A retry is a fresh round of attempts under the same identity; a skip records the action as not done.
        if (action === 'retry') Object.assign(e, { status: 'pending', attemptBudget: e.attempts + e.retry.maxAttempts });
        else Object.assign(e, { status: 'skipped', reason: 'operator-skipped' });
      }
      const remaining = plan.entries.some((e) => e.status === 'pending' || e.status === 'running');
      plan.status = remaining ? 'running' : foldSettled(plan.entries);
      await this.commitOrConflict(plan);
      if (remaining) await this.unwind(runId);
    }
    const after = (await compensationStore.get(m, actor, runId))!;
    return { runId, action, audited: true, planVersion: after.planVersion, compensationStatus: after.status };
  }

  private async commitOrConflict(plan: Plan): Promise<void> {
    try {
      await commitPlan(this.deps, plan, [], { release: true });
    } catch (e) {
      if (e instanceof PlanChanged) throw new ConflictError('compensation_plan_changed', 'The plan changed while the action was decided; read it again.');
      throw e;
    }
  }

  private async decided(actor: Principal, plan: Plan, action: OperatorAction, allowed: boolean, justification?: string): Promise<void> {
    const payload = {
      principal: actor.principal,
      action: `compensation:${action}`,
      resource: plan.runId,
      allowed,
      reason: allowed ? `operator ${action} on compensation plan version ${plan.planVersion}` : `scope-missing: ${COMPENSATE_SCOPE} (plan version ${plan.planVersion})`,
    };
    await this.ds.transaction(async (m) => {
      await this.events.appendBatch({ tenant: plan.tenant, workspace: plan.workspace ?? undefined }, plan.runId, [{ type: 'authorization.decided', payload }], m);
      // The justification of a skip goes to the audit record only, never to the event payload.
      await this.audit.record(m, {
        tenant: plan.tenant,
        workspace: plan.workspace ?? undefined,
        actor: auditActor(actor),
        action: 'authorization.decided',
        resource: { type: 'run', id: plan.runId },
        details: { action: payload.action, allowed, planVersion: plan.planVersion, justification: justification ?? null },
      });
    });
    this.events.wake();
  }
}
