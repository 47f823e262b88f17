import { randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { GoalRunOutcome, GoalVerdict, GoalWorkSubject } from '@openwop-host/plugin-sdk';
import { DataSource, EntityManager } from 'typeorm';
import type { QueryDeepPartialEntity } from 'typeorm/query-builder/QueryPartialEntity';
import { ConflictError, DomainError, NotFoundError, UnprocessableError, ValidationError } from '../../platform/errors/domain-error';
import { EventLogService, HOST_STREAM } from '../../platform/events/event-log.service';
import type { Principal, TenantScope } from '../../platform/identity/principal';
import { keysetPage } from '../../platform/pagination/keyset';
import type { Page, PageRequest } from '../../platform/pagination/page-query';
import { SchemaRegistry } from '../../platform/schemas/schema-registry';
import { GoalClock } from './goal-clock';
import { GoalExtensionsService } from './goal-extensions.service';
import { checkSchedule, crossedBound, deadlineOf, effectiveBounds, hasDeclaredBounds, nextDueAt, nextSlot } from './goal-policy';
import { toGoalRunView, toGoalStatusView, toGoalView, GoalRunView, GoalStatusView, GoalView } from './goal-view';
import { GoalBounds, GoalCheck, GoalContinuationMode, GoalEntity, GoalRunEntity, GoalSchedule, GoalState } from './goal.entity';
import { GOALS_SETTINGS, GoalsSettings } from './goals.settings';
import { HostSchemaJudge } from './judges/host-schema.judge';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const GOAL_STATES: readonly GoalState[] = ['active', 'satisfied', 'escalated', 'abandoned', 'bound-exceeded'];
const DEFAULT_POLL_MS = 1000;

export type FinalGoalState = Exclude<GoalState, 'active'>;

interface CreateBody {
  objective: string;
  completion: { check: GoalCheck; verifierRef?: string | null };
  continuation: { mode: string; armRef?: string | null };
  bounds?: GoalBounds;
  criteria?: Record<string, unknown>;
  schedule?: GoalSchedule;
  worker?: string;
  state?: string;
}

type UpdateBody = Partial<Omit<CreateBody, 'bounds'>>;

export interface RecordOptions {
  now: Date;
  /** The scheduler's lease owner: every write is conditional on still holding the claim. */
  fence?: string;
  /**
   * What to do when the judge cannot give a verdict: a client report is refused (409, nothing
   * recorded, may be reported again); a run the scheduler followed to its end counts as unsatisfied
   * (fail closed: the iteration is spent, so continuation stays bounded).
   */
  onNoVerdict: 'refuse' | 'unsatisfied';
  /** The goal row as the scheduler claimed it (saves a read). */
  known?: GoalEntity;
}

export interface RecordResult {
  goal?: GoalEntity;
  /** False when the run was already recorded (nothing changed) or the claim was lost. */
  recorded: boolean;
  /** The scheduler's claim was taken over: nothing was written. */
  fenced?: boolean;
}

/**
 * Standing goals (RFC 0097): create, read, edit, pause/resume/abandon, and the recording of
 * contributing runs. Completion comes only from the judge a goal declares; every declared bound is
 * enforced before judging, and crossing one closes the goal. Every query is filtered by the
 * caller's tenant (and workspace); mutations also by the owning principal, and anything else is 404.
 */
@Injectable()
export class GoalsService {
  constructor(
    private readonly ds: DataSource,
    private readonly events: EventLogService,
    private readonly clock: GoalClock,
    private readonly extensions: GoalExtensionsService,
    private readonly hostJudge: HostSchemaJudge,
    private readonly schemas: SchemaRegistry,
    @Inject(GOALS_SETTINGS) private readonly settings: GoalsSettings,
  ) {}

  /** The continuation modes this host serves (what agents.goals.continuation advertises). */
  servedModes(): GoalContinuationMode[] {
    return this.extensions.availableWorkerIds().length ? ['schedule', 'manual'] : ['manual'];
  }

  defaultWorker(): string | undefined {
    const ids = this.extensions.availableWorkerIds();
    if (this.settings.defaultWorker) return ids.includes(this.settings.defaultWorker) ? this.settings.defaultWorker : undefined;
    if (ids.includes('openwop-runtime')) return 'openwop-runtime';
    return ids.length === 1 ? ids[0] : undefined;
  }

  async create(p: Principal, raw: unknown): Promise<GoalView> {
    const body = (raw ?? {}) as Record<string, unknown>;
    // Bounds are checked before anything else: an unbounded goal is refused whatever else is wrong.
    if (this.settings.requiresBounds && !hasDeclaredBounds(typeof body === 'object' ? body.bounds : undefined)) {
      throw new UnprocessableError('bounds_required', 'A goal must declare bounds (maxLoopIterations, runTimeoutMs or maxCostUsd): this host requires bounded continuation.', {
        requiresBounds: true,
      });
    }
    refuseClientState(body, true);
    this.validate('goal-create-request', raw);
    const req = raw as CreateBody;
    const check = req.completion.check;
    const mode = this.checkMode(req.continuation.mode);
    if (req.criteria !== undefined && check !== 'host') throw new ValidationError('criteria apply to the host judge only.', { check });
    this.checkJudge(check, req.criteria);
    const worker = mode === 'schedule' ? this.checkWorker(req.worker) : null;
    if (mode !== 'schedule' && (req.worker !== undefined || req.schedule !== undefined)) {
      throw new ValidationError('worker and schedule apply to schedule continuation only.', { mode });
    }
    const schedule = mode === 'schedule' ? this.checkScheduleValue(req.schedule ?? { intervalMs: this.settings.defaultIntervalMs }) : null;

    const now = await this.clock.now();
    const bounds = effectiveBounds(req.bounds ?? {}, this.settings.limits);
    const repo = this.ds.getRepository(GoalEntity);
    const goal = repo.create({
      id: randomUUID(),
      tenant: p.tenant,
      workspace: p.workspace ?? null,
      principal: p.principal,
      objective: req.objective,
      state: 'active',
      judge: check,
      verifierRef: check === 'verifier' ? (req.completion.verifierRef ?? null) : null,
      criteria: check === 'host' ? (req.criteria ?? null) : null,
      continuationMode: mode,
      armRef: null,
      schedule,
      worker,
      bounds,
      deadlineAt: deadlineOf(now, bounds),
      iterations: 0,
      costUsd: 0,
      contributingRunIds: [],
      lastVerdict: null,
      paused: false,
      dispatchKey: null,
      pendingRunId: null,
      dispatchCount: 0,
      leaseOwner: null,
      leaseExpiresAt: null,
      closedAt: null,
      createdAt: now,
      updatedAt: now,
    });
    // The arm (RFC 0052 job) is named after the goal, so the id is chosen here.
    if (mode === 'schedule') goal.armRef = armRefOf(goal.id);
    goal.nextDueAt = nextDueAt(goal, now, { slot: this.armedSlot(goal, now, true), pollMs: this.pollMs(goal) });
    await repo.insert(goal as QueryDeepPartialEntity<GoalEntity>);
    return toGoalView(goal);
  }

  /** A page of the caller's goals, newest first. */
  async list(scope: TenantScope, q: PageRequest & { state?: string } = {}): Promise<Page<GoalView>> {
    const { state } = q;
    if (state !== undefined && !GOAL_STATES.includes(state as GoalState)) {
      throw new ValidationError(`state must be one of ${GOAL_STATES.join(', ')}.`, { state });
    }
    const qb = this.ds.getRepository(GoalEntity).createQueryBuilder('g').where('g.tenant = :t', { t: scope.tenant });
    if (scope.workspace) qb.andWhere('g.workspace = :w', { w: scope.workspace });
    if (state) qb.andWhere('g.state = :s', { s: state });
    const page = await keysetPage(qb, q, {
      keys: [{ column: 'g.created_at', type: 'timestamptz' }, { column: 'g.id', type: 'uuid' }],
      direction: 'DESC',
      binding: { list: 'goals', tenant: scope.tenant, workspace: scope.workspace, filters: { state } },
    });
    return { items: page.items.map(toGoalView), nextCursor: page.nextCursor };
  }

  async get(scope: TenantScope, id: string): Promise<GoalView> {
    return toGoalView(await this.find(scope, id));
  }

  async status(scope: TenantScope, id: string): Promise<GoalStatusView> {
    return toGoalStatusView(await this.find(scope, id));
  }

  /** A page of the contributing runs of a goal, in the order they were recorded. */
  async runs(scope: TenantScope, id: string, q: PageRequest = {}): Promise<Page<GoalRunView>> {
    const g = await this.find(scope, id);
    const qb = this.ds.getRepository(GoalRunEntity).createQueryBuilder('r').where('r.tenant = :t AND r.goal_id = :g', { t: g.tenant, g: g.id });
    const page = await keysetPage(qb, q, {
      keys: [{ column: 'r.ordinal', type: 'int' }, { column: 'r.run_id', type: 'text' }],
      direction: 'ASC',
      binding: { list: `goal-runs:${g.id}`, tenant: scope.tenant, workspace: scope.workspace },
    });
    return { items: page.items.map(toGoalRunView), nextCursor: page.nextCursor };
  }

  async update(p: Principal, id: string, raw: unknown): Promise<GoalView> {
    // A foreign or unknown goal is 404 before the body is looked at, like every other mutation.
    await this.findOwned(p, id);
    refuseClientState((raw ?? {}) as Record<string, unknown>, false);
    this.validate('goal-update-request', raw);
    const req = raw as UpdateBody;
    const now = await this.clock.now();
    return this.mutate(p, id, async (g) => {
      if (g.state !== 'active') throw new ConflictError('goal_not_active', `The goal is ${g.state}; only an active goal can be edited.`, { state: g.state });
      if (req.objective !== undefined) g.objective = req.objective;
      const check = req.completion?.check ?? g.judge;
      if (req.criteria !== undefined && check !== 'host') throw new ValidationError('criteria apply to the host judge only.', { check });
      const criteria = check === 'host' ? (req.criteria ?? g.criteria ?? undefined) : undefined;
      this.checkJudge(check, criteria);
      if (req.completion) g.verifierRef = check === 'verifier' ? (req.completion.verifierRef ?? null) : null;
      g.judge = check;
      g.criteria = criteria ?? null;
      const previousMode = g.continuationMode;
      if (req.continuation) g.continuationMode = this.checkMode(req.continuation.mode);
      if (g.continuationMode === 'schedule') {
        if (req.worker !== undefined || !g.worker) g.worker = this.checkWorker(req.worker ?? g.worker ?? undefined);
        if (req.schedule !== undefined) g.schedule = this.checkScheduleValue(req.schedule);
        g.schedule ??= { intervalMs: this.settings.defaultIntervalMs };
        g.armRef = armRefOf(g.id);
      } else {
        if (req.worker !== undefined || req.schedule !== undefined) throw new ValidationError('worker and schedule apply to schedule continuation only.', { mode: g.continuationMode });
        g.armRef = null;
      }
      const rearm = g.continuationMode !== previousMode || req.schedule !== undefined;
      if (rearm) g.nextDueAt = nextDueAt(g, now, { slot: this.armedSlot(g, now, true), pollMs: this.pollMs(g) });
      g.updatedAt = now;
    });
  }

  /** Suspends continuation; the wire state stays `active` (the protocol has no paused state). */
  async pause(p: Principal, id: string): Promise<GoalView> {
    const now = await this.clock.now();
    return this.mutate(p, id, async (g) => {
      this.requireActive(g);
      if (g.paused) return;
      g.paused = true;
      g.nextDueAt = nextDueAt(g, now, { slot: null, pollMs: this.pollMs(g) });
      g.updatedAt = now;
    });
  }

  /** Re-arms continuation; a schedule goal is due at once (one catch-up iteration, not a backlog). */
  async resume(p: Principal, id: string): Promise<GoalView> {
    const now = await this.clock.now();
    return this.mutate(p, id, async (g) => {
      this.requireActive(g);
      if (!g.paused) return;
      g.paused = false;
      g.nextDueAt = nextDueAt(g, now, { slot: this.armedSlot(g, now, true), pollMs: this.pollMs(g) });
      g.updatedAt = now;
    });
  }

  /** The one terminal state a client may choose; emits goal.closed once, on the real transition. */
  async abandon(p: Principal, id: string): Promise<GoalView> {
    const now = await this.clock.now();
    return this.mutate(p, id, async (g, m) => {
      if (g.state === 'abandoned') return;
      this.requireActive(g);
      await this.closeIn(m, g, 'abandoned', now);
    });
  }

  /** A contributing run reported from outside (manual continuation, or any run working on the goal). */
  async reportRun(p: Principal, id: string, raw: unknown): Promise<GoalView> {
    const goal = await this.findOwned(p, id);
    this.validate('goal-run-report', raw);
    const req = raw as { runId: string; costUsd?: number; output?: unknown };
    const result = await this.recordOutcome(goal, { runId: req.runId, status: 'reported', costUsd: req.costUsd, output: req.output }, { now: await this.clock.now(), onNoVerdict: 'refuse' });
    return toGoalView(result.goal ?? (await this.findOwned(p, id)));
  }

  /**
   * Records one contributing run of a goal: bounds first (a run past the deadline or the cost
   * ceiling closes the goal unjudged), then the judge's verdict, recorded once per run. Reporting a
   * recorded run again changes nothing and never asks the judge again.
   */
  async recordOutcome(ref: Pick<GoalEntity, 'id' | 'tenant'>, outcome: GoalRunOutcome, opts: RecordOptions): Promise<RecordResult> {
    // The scheduler passes the row it claimed; a client report reads it.
    const before = opts.known ?? (await this.ds.getRepository(GoalEntity).findOne({ where: { id: ref.id, tenant: ref.tenant } }));
    if (!before) return { recorded: false, fenced: true };
    // One read answers both: is the claim still ours, and is the run already recorded? A recorded run
    // is never judged again.
    const [fresh] = (await this.ds.query(
      `SELECT g."lease_owner" AS owner, g."state" AS state,
              EXISTS (SELECT 1 FROM "goal_run" r WHERE r."tenant" = $1 AND r."goal_id" = $2 AND r."run_id" = $3) AS seen
       FROM "goal" g WHERE g."tenant" = $1 AND g."id" = $2`,
      [ref.tenant, ref.id, outcome.runId],
    )) as Array<{ owner: string | null; state: GoalState; seen: boolean }>;
    if (!fresh || (opts.fence && fresh.owner !== opts.fence)) return { recorded: false, fenced: true, goal: before };
    if (fresh.seen) return this.settleDuplicate(ref, opts);
    if (fresh.state !== 'active') {
      if (opts.fence) return { recorded: false, fenced: true, goal: before };
      throw new ConflictError('goal_not_active', `The goal is ${fresh.state}; it takes no more runs.`, { state: fresh.state });
    }
    const cost = outcome.costUsd !== undefined && Number.isFinite(outcome.costUsd) && outcome.costUsd > 0 ? outcome.costUsd : 0;
    // Don't invoke the judge past a bound.
    const boundBefore = crossedBound({ ...before, costUsd: before.costUsd + cost }, opts.now);
    // An escalated run waits for a human: it is not judged, the goal stops (RFC 0044).
    const verdict = boundBefore || outcome.escalated ? undefined : await this.judge(before, outcome, opts);

    return this.ds.transaction(async (m) => {
      const g = await this.lockGoal(m, ref, opts.fence);
      if (!g) return { recorded: false, fenced: true };
      if (g.state !== 'active') {
        if (opts.fence) return { recorded: false, fenced: true, goal: g };
        const again = (await m.query(`SELECT 1 FROM "goal_run" WHERE "tenant" = $1 AND "goal_id" = $2 AND "run_id" = $3`, [ref.tenant, ref.id, outcome.runId])) as unknown[];
        if (again.length) return { recorded: false, goal: g };
        throw new ConflictError('goal_not_active', `The goal is ${g.state}; it takes no more runs.`, { state: g.state });
      }
      g.costUsd += cost;
      g.contributingRunIds = [...(g.contributingRunIds ?? []), outcome.runId];
      // The scheduler only records the outcome of the goal's in-flight dispatch.
      const wasPending = g.pendingRunId === outcome.runId || opts.fence !== undefined;
      if (wasPending) {
        g.pendingRunId = null;
        g.dispatchKey = null;
      }
      const judged = !crossedBound(g, opts.now) && verdict !== undefined;
      // The primary key records a run once: a concurrent report of the same run inserts nothing.
      const inserted = (await m.query(
        `INSERT INTO "goal_run" ("tenant", "goal_id", "run_id", "ordinal", "status", "cost_usd", "satisfied", "confidence", "recorded_at")
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT DO NOTHING RETURNING "run_id"`,
        [g.tenant, g.id, outcome.runId, g.contributingRunIds.length, outcome.status, outcome.costUsd ?? null, judged ? verdict!.satisfied : null, judged ? verdict!.confidence : null, opts.now],
      )) as unknown[];
      if (!inserted.length) return { recorded: false, goal: g };

      const events: Array<[string, Record<string, unknown>]> = [];
      if (!judged) {
        events.push(...this.close(g, outcome.escalated && !crossedBound(g, opts.now) ? 'escalated' : 'bound-exceeded', opts.now));
      } else {
        g.iterations += 1;
        g.lastVerdict = { satisfied: verdict!.satisfied, confidence: verdict!.confidence, runId: outcome.runId };
        events.push(['goal.evaluated', { goalId: g.id, satisfied: verdict!.satisfied, confidence: verdict!.confidence, runId: outcome.runId, iterations: g.iterations }]);
        if (verdict!.satisfied) {
          events.push(...this.close(g, 'satisfied', opts.now));
        } else if (g.bounds.maxLoopIterations !== undefined && g.iterations >= g.bounds.maxLoopIterations) {
          // The Nth unsatisfied verdict closes the goal: no N+1th run is ever started.
          events.push(...this.close(g, 'bound-exceeded', opts.now));
        } else if (wasPending || opts.fence) {
          g.nextDueAt = nextDueAt(g, opts.now, { slot: this.armedSlot(g, opts.now, false), pollMs: this.pollMs(g) });
        }
      }
      if (opts.fence) {
        g.leaseOwner = null;
        g.leaseExpiresAt = null;
      }
      g.updatedAt = opts.now;
      // The goal row first, the events last: the tenant's event-stream row stays locked only briefly.
      await this.persist(m, g);
      for (const [type, payload] of events) await this.events.append(scopeOf(g), HOST_STREAM, type, payload, { manager: m, correlationId: g.id });
      return { recorded: true, goal: g };
    });
  }

  /** Closes a goal inside the caller's transaction: terminal state, continuation disarmed, goal.closed. */
  async closeIn(m: EntityManager, g: GoalEntity, finalState: FinalGoalState, now: Date): Promise<void> {
    const events = this.close(g, finalState, now);
    await this.persist(m, g);
    for (const [type, payload] of events) await this.events.append(scopeOf(g), HOST_STREAM, type, payload, { manager: m, correlationId: g.id });
  }

  /** The terminal transition in memory; returns the goal.closed event to append. */
  private close(g: GoalEntity, finalState: FinalGoalState, now: Date): Array<[string, Record<string, unknown>]> {
    g.state = finalState;
    g.closedAt = now;
    g.nextDueAt = null;
    g.paused = false;
    g.armRef = null;
    g.dispatchKey = null;
    g.pendingRunId = null;
    g.leaseOwner = null;
    g.leaseExpiresAt = null;
    g.updatedAt = now;
    return [['goal.closed', { goalId: g.id, finalState }]];
  }

  /** Writes every mutable column of a locked goal in one UPDATE (no read-before-write). */
  async persist(m: EntityManager, g: GoalEntity): Promise<void> {
    await m.getRepository(GoalEntity).update({ id: g.id, tenant: g.tenant }, {
      objective: g.objective,
      state: g.state,
      judge: g.judge,
      verifierRef: g.verifierRef,
      criteria: g.criteria as QueryDeepPartialEntity<GoalEntity>['criteria'],
      continuationMode: g.continuationMode,
      armRef: g.armRef,
      schedule: g.schedule as QueryDeepPartialEntity<GoalEntity>['schedule'],
      worker: g.worker,
      iterations: g.iterations,
      costUsd: g.costUsd,
      contributingRunIds: g.contributingRunIds,
      lastVerdict: g.lastVerdict as QueryDeepPartialEntity<GoalEntity>['lastVerdict'],
      paused: g.paused,
      nextDueAt: g.nextDueAt,
      leaseOwner: g.leaseOwner,
      leaseExpiresAt: g.leaseExpiresAt,
      dispatchKey: g.dispatchKey,
      pendingRunId: g.pendingRunId,
      closedAt: g.closedAt,
      updatedAt: g.updatedAt,
    });
  }

  /** The goal row locked for update, only while `fence` (when given) still holds the claim. */
  async lockGoal(m: EntityManager, ref: Pick<GoalEntity, 'id' | 'tenant'>, fence?: string): Promise<GoalEntity | null> {
    const where: Record<string, unknown> = { id: ref.id, tenant: ref.tenant };
    if (fence) where.leaseOwner = fence;
    return m.getRepository(GoalEntity).findOne({ where, lock: { mode: 'pessimistic_write' } });
  }

  /** The next iteration slot of an armed schedule goal (null when nothing is armed). */
  armedSlot(g: GoalEntity, now: Date, immediate: boolean): Date | null {
    if (g.state !== 'active' || g.paused || g.continuationMode !== 'schedule' || !g.schedule) return null;
    if (immediate && 'intervalMs' in g.schedule) return now;
    return nextSlot(g.schedule, now);
  }

  pollMs(g: GoalEntity): number {
    const w = this.extensions.worker(g.worker);
    return Math.max(10, w?.pollIntervalMs ?? DEFAULT_POLL_MS);
  }

  subjectOf(g: GoalEntity): GoalWorkSubject {
    const s: GoalWorkSubject = { goalId: g.id, tenant: g.tenant, objective: g.objective, iteration: g.iterations + 1 };
    if (g.workspace) s.workspace = g.workspace;
    return s;
  }

  private async settleDuplicate(ref: Pick<GoalEntity, 'id' | 'tenant'>, opts: RecordOptions): Promise<RecordResult> {
    if (!opts.fence) return { recorded: false, goal: (await this.ds.getRepository(GoalEntity).findOne({ where: { id: ref.id, tenant: ref.tenant } })) ?? undefined };
    // The scheduler followed a run that was already recorded (reported by a client too): finish the
    // iteration without recording anything twice.
    return this.ds.transaction(async (m) => {
      const g = await this.lockGoal(m, ref, opts.fence);
      if (!g) return { recorded: false, fenced: true };
      g.pendingRunId = null;
      g.dispatchKey = null;
      g.leaseOwner = null;
      g.leaseExpiresAt = null;
      g.nextDueAt = nextDueAt(g, opts.now, { slot: this.armedSlot(g, opts.now, false), pollMs: this.pollMs(g) });
      g.updatedAt = opts.now;
      await this.persist(m, g);
      return { recorded: false, goal: g };
    });
  }

  private async judge(g: GoalEntity, run: GoalRunOutcome, opts: RecordOptions): Promise<GoalVerdict> {
    const judge = this.extensions.judgeFor(g.judge, g.verifierRef);
    const fallback: GoalVerdict = { satisfied: false, confidence: 0 };
    if (!judge) {
      if (opts.onNoVerdict === 'refuse') throw new ConflictError('judge_unavailable', `No ${g.judge} judge is available for this goal.`, { check: g.judge });
      return fallback;
    }
    try {
      const v = await judge.evaluate({
        goal: { ...this.subjectOf(g), criteria: g.criteria ?? undefined, verifierRef: g.verifierRef },
        run,
      });
      if (typeof v?.satisfied !== 'boolean') throw new Error('the judge returned no boolean verdict');
      const confidence = typeof v.confidence === 'number' && v.confidence >= 0 && v.confidence <= 1 ? v.confidence : 0;
      return { satisfied: v.satisfied, confidence };
    } catch (e) {
      if ((e as Error)?.name === 'GoalVerdictUnavailable') {
        if (opts.onNoVerdict === 'refuse') throw new ConflictError('verdict_unavailable', (e as Error).message, { runId: run.runId });
        return fallback;
      }
      // A broken judge never completes a goal.
      if (opts.onNoVerdict === 'refuse') throw new DomainError('judge_failed', 502, 'The goal judge failed; nothing was recorded.', { runId: run.runId });
      return fallback;
    }
  }

  private requireActive(g: GoalEntity): void {
    if (g.state !== 'active') throw new ConflictError('goal_not_active', `The goal is ${g.state}.`, { state: g.state });
  }

  private validate(schema: string, value: unknown): void {
    const violations = this.schemas.validate(schema, value);
    if (violations.length) throw new ValidationError('The request body is invalid.', { violations });
  }

  private checkMode(mode: string): GoalContinuationMode {
    if (!(this.servedModes() as string[]).includes(mode)) {
      throw new UnprocessableError('continuation_mode_unsupported', `This host does not serve "${mode}" continuation.`, { mode, served: this.servedModes() });
    }
    return mode as GoalContinuationMode;
  }

  private checkJudge(check: GoalCheck, criteria: Record<string, unknown> | undefined): void {
    if (!this.extensions.servesJudge(check)) throw new UnprocessableError('judge_unsupported', `This host does not serve the "${check}" judge.`, { check });
    if (check === 'host') {
      if (!criteria) throw new UnprocessableError('criteria_required', 'The host judge needs completion criteria: a JSON Schema the run output must satisfy.', { check });
      const error = this.hostJudge.compileError(criteria);
      if (error) throw new ValidationError('criteria is not a valid JSON Schema.', { violations: [{ path: '/criteria', message: error, keyword: 'schema' }] });
    }
  }

  private checkWorker(requested: string | undefined): string {
    const id = requested ?? this.defaultWorker();
    if (!id || !this.extensions.worker(id)) {
      throw new UnprocessableError('worker_unavailable', requested ? `No goal worker "${requested}" is available.` : 'No goal worker is available for schedule continuation.', {
        worker: requested ?? null,
        available: this.extensions.availableWorkerIds(),
      });
    }
    return id;
  }

  private checkScheduleValue(schedule: GoalSchedule): GoalSchedule {
    if ('intervalMs' in schedule && schedule.intervalMs < this.settings.minIntervalMs) {
      throw new ValidationError(`schedule.intervalMs must be at least ${this.settings.minIntervalMs}.`, { violations: [{ path: '/schedule/intervalMs', message: `must be >= ${this.settings.minIntervalMs}`, keyword: 'minimum' }] });
    }
    const error = checkSchedule(schedule);
    if (error) throw new ValidationError('schedule is invalid.', { violations: [{ path: '/schedule', message: error, keyword: 'cron' }] });
    return schedule;
  }

  private async find(scope: TenantScope, id: string): Promise<GoalEntity> {
    if (!UUID.test(id)) throw new NotFoundError('No such goal.');
    const where: Record<string, unknown> = { id, tenant: scope.tenant };
    if (scope.workspace) where.workspace = scope.workspace;
    const g = await this.ds.getRepository(GoalEntity).findOne({ where });
    if (!g) throw new NotFoundError('No such goal.');
    return g;
  }

  private ownedWhere(p: Principal, id: string): Record<string, unknown> {
    if (!UUID.test(id)) throw new NotFoundError('No such goal.');
    const where: Record<string, unknown> = { id, tenant: p.tenant, principal: p.principal };
    if (p.workspace) where.workspace = p.workspace;
    return where;
  }

  private async findOwned(p: Principal, id: string): Promise<GoalEntity> {
    const g = await this.ds.getRepository(GoalEntity).findOne({ where: this.ownedWhere(p, id) });
    if (!g) throw new NotFoundError('No such goal.');
    return g;
  }

  /** Applies a change to a goal the caller owns, under a row lock; a foreign goal is 404. */
  private async mutate(p: Principal, id: string, change: (g: GoalEntity, m: EntityManager) => Promise<void>): Promise<GoalView> {
    const where = this.ownedWhere(p, id);
    return this.ds.transaction(async (m) => {
      const g = await m.getRepository(GoalEntity).findOne({ where, lock: { mode: 'pessimistic_write' } });
      if (!g) throw new NotFoundError('No such goal.');
      await change(g, m);
      await this.persist(m, g);
      return toGoalView(g);
    });
  }
}

export function armRefOf(goalId: string): string {
  return `goal:${goalId}:continuation`;
}

function scopeOf(g: GoalEntity): TenantScope {
  return g.workspace ? { tenant: g.tenant, workspace: g.workspace } : { tenant: g.tenant };
}

/** A client never sets the state: completion is the judge's, the rest have their own verbs. */
function refuseClientState(body: Record<string, unknown>, creating: boolean): void {
  if (!body || typeof body !== 'object' || Array.isArray(body) || body.state === undefined) return;
  if (creating && body.state === 'active') return;
  throw new UnprocessableError('validation_error', 'The goal state is set by the host: only the judge can satisfy a goal; use pause, resume or abandon.', {
    state: body.state,
  });
}

