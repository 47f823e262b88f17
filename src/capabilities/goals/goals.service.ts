import { randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { ConflictError, NotFoundError, UnprocessableError, ValidationError } from '../../platform/errors/domain-error';
import { EventLogService } from '../../platform/events/event-log.service';
import { RUN_CREATE_SCOPE } from '../../platform/run-ports/run-launcher';
import { delegationOf, requireDelegable } from '../../platform/identity/delegation';
import type { Principal, TenantScope } from '../../platform/identity/principal';
import { keysetPage } from '../../platform/pagination/keyset';
import type { Page, PageRequest } from '../../platform/pagination/page-query';
import { SchemaRegistry } from '../../platform/schemas/schema-registry';
import { GoalClock } from './goal-clock';
import { GoalExtensionsService } from './goal-extensions.service';
import { closeGoal, FinalGoalState, GoalContinuationService, scopeOf } from './goal-continuation.service';
import { GoalWorkerSelector } from './goal-worker-selector.service';
import { GoalStore } from './goal-store';
import { checkSchedule, deadlineOf, effectiveBounds, hasDeclaredBounds, nextDueAt } from './goal-policy';
import { toGoalRunView, toGoalStatusView, toGoalView, GoalRunView, GoalStatusView, GoalView } from './goal-view';
import { GoalBounds, GoalCheck, GoalContinuationMode, GoalEntity, GoalRunEntity, GoalSchedule, GoalState, RUN_MODES } from './goal.entity';
import { GOALS_SETTINGS, GoalsSettings } from './goals.settings';
import { HostSchemaJudge } from './judges/host-schema.judge';
import { UUID } from '../../platform/ids';
import { inScope, scopedQuery } from '../../platform/tenancy/workspace-scope';

const GOAL_STATES: readonly GoalState[] = ['active', 'satisfied', 'escalated', 'abandoned', 'bound-exceeded'];

interface CreateBody {
  objective: string;
  completion: { check: GoalCheck; verifierRef?: string | null };
  continuation: { mode: string; armRef?: string | null };
  bounds?: GoalBounds;
  criteria?: Record<string, unknown>;
  schedule?: GoalSchedule;
  commitment?: { at: string };
  worker?: string;
  workflowId?: string;
  state?: string;
}

type UpdateBody = Partial<Omit<CreateBody, 'bounds'>>;

/**
 * Standing goals (RFC 0097): create, read, edit, pause/resume/abandon, and contributing runs
 * reported by clients (recorded by the continuation step, GoalContinuationService). Completion comes only from the judge a goal declares; every declared bound is
 * enforced before judging, and crossing one closes the goal. Every query is filtered by the
 * caller's tenant (and workspace); mutations also by the owning principal, and anything else is 404.
 */
@Injectable()
export class GoalsService {
  constructor(
    private readonly ds: DataSource,
    private readonly store: GoalStore,
    private readonly events: EventLogService,
    private readonly clock: GoalClock,
    private readonly extensions: GoalExtensionsService,
    private readonly hostJudge: HostSchemaJudge,
    private readonly continuation: GoalContinuationService,
    private readonly workers: GoalWorkerSelector,
    private readonly schemas: SchemaRegistry,
    @Inject(GOALS_SETTINGS) private readonly settings: GoalsSettings,
  ) {}

  /** The continuation modes this host serves (what agents.goals.continuation advertises). */
  servedModes(): GoalContinuationMode[] {
    return this.workers.servedModes();
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
    const worker = RUN_MODES.includes(mode) ? this.workers.choose(mode as RunMode, req.worker, { ...scopeOf({ tenant: p.tenant, workspace: p.workspace ?? null }), workflowId: req.workflowId }) : null;
    this.checkModeExtensions(mode, req);
    const schedule = usesSchedule(mode) ? this.checkScheduleValue(req.schedule ?? { intervalMs: this.settings.defaultIntervalMs }) : null;
    // The goal's runs will act for its creator: it must hold everything they need, and the goal records exactly that.
    const needed = await this.workScopes(p, { worker, continuationMode: mode, workflowId: req.workflowId ?? null });
    requireDelegable(p, needed, 'This goal');

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
      commitmentAt: req.commitment ? new Date(req.commitment.at) : null,
      workflowId: req.workflowId ?? null,
      delegatedScopes: delegationOf(p, needed).scopes,
      delegatedKeyId: delegationOf(p, needed).keyId,
      heartbeatState: null,
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
    // The arm (RFC 0052 job, RFC 0068 commitment, RFC 0060 heartbeat) is named after the goal, so the id is chosen here.
    goal.armRef = armRefOf(goal.id, mode);
    goal.nextDueAt = nextDueAt(goal, now, { slot: this.armedSlot(goal, now, true), pollMs: this.pollMs(goal) });
    await this.store.insert(goal);
    return toGoalView(goal);
  }

  /**
   * The scopes a goal's runs will act with: none for a goal that starts no runs (manual), else
   * `runs:create` and whatever its worker says the goal's runs need (the local worker: the scopes of
   * the chain's tools, child chains included).
   */
  private async workScopes(p: TenantScope, g: Pick<GoalEntity, 'worker' | 'continuationMode' | 'workflowId'>): Promise<string[]> {
    if (!RUN_MODES.includes(g.continuationMode) || !g.worker) return [];
    const provider = this.workers.workerOf({ worker: g.worker });
    const target = { tenant: p.tenant, ...(p.workspace ? { workspace: p.workspace } : {}), mode: g.continuationMode as RunMode, ...(g.workflowId ? { workflowId: g.workflowId } : {}) };
    return [...new Set([RUN_CREATE_SCOPE, ...((await provider?.requiredScopes?.(target)) ?? [])])].sort();
  }

  /** A page of the caller's goals, newest first. */
  async list(scope: TenantScope, q: PageRequest & { state?: string } = {}): Promise<Page<GoalView>> {
    const { state } = q;
    if (state !== undefined && !GOAL_STATES.includes(state as GoalState)) {
      throw new ValidationError(`state must be one of ${GOAL_STATES.join(', ')}.`, { state });
    }
    const qb = scopedQuery(this.ds.getRepository(GoalEntity).createQueryBuilder('g'), scope);
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
    const current = await this.findOwned(p, id);
    refuseClientState((raw ?? {}) as Record<string, unknown>, false);
    this.validate('goal-update-request', raw);
    const req = raw as UpdateBody;
    const now = await this.clock.now();
    // What the goal's work will need after this edit, worked out before the goal is locked (it reads
    // the chain and the tool catalog); the edit below applies it only when the work it describes changes.
    const nextMode = req.continuation ? this.checkMode(req.continuation.mode) : current.continuationMode;
    const nextWorkflow = req.workflowId !== undefined ? req.workflowId : current.workflowId;
    const workChanges = RUN_MODES.includes(nextMode) && (req.workflowId !== undefined || req.worker !== undefined || nextMode !== current.continuationMode);
    const needed = workChanges
      ? await this.workScopes(p, {
          continuationMode: nextMode,
          workflowId: nextWorkflow,
          worker: this.workers.choose(nextMode as RunMode, req.worker ?? current.worker ?? undefined, { ...scopeOf(current), workflowId: nextWorkflow ?? undefined }),
        })
      : [];
    if (workChanges) requireDelegable(p, needed, 'This goal');
    return this.mutate(p, id, async (g, m) => {
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
      const mode = g.continuationMode;
      this.checkModeExtensions(mode, req, mode !== previousMode);
      // (A manual goal keeps its worker: a run it had in flight is still followed to its end.)
      if (req.workflowId !== undefined) g.workflowId = req.workflowId;
      if (RUN_MODES.includes(mode) && (req.worker !== undefined || req.workflowId !== undefined || !g.worker || mode !== previousMode)) {
        g.worker = this.workers.choose(mode as RunMode, req.worker ?? g.worker ?? undefined, { ...scopeOf(g), workflowId: g.workflowId ?? undefined });
      }
      if (workChanges) {
        // The goal's work changed: its editor now delegates exactly what the new work needs.
        const delegation = delegationOf(p, needed);
        g.delegatedScopes = delegation.scopes;
        g.delegatedKeyId = delegation.keyId;
        await this.store.setDelegation(m, g, delegation);
      }
      if (usesSchedule(mode)) {
        if (req.schedule !== undefined) g.schedule = this.checkScheduleValue(req.schedule);
        g.schedule ??= { intervalMs: this.settings.defaultIntervalMs };
      }
      // A new instant re-arms the commitment (it fires once per instant); leaving commitment mode disarms it.
      if (mode !== 'commitment') g.commitmentAt = null;
      else if (req.commitment) g.commitmentAt = new Date(req.commitment.at);
      if (mode !== 'heartbeat') g.heartbeatState = null;
      g.armRef = armRefOf(g.id, mode);
      const rearm = g.continuationMode !== previousMode || req.schedule !== undefined || req.commitment !== undefined;
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

  /**
   * A contributing run reported from outside (manual continuation, or any run working on the goal):
   * the same continuation step the scheduler uses, for one goal. Reporting a recorded run again
   * changes nothing and never asks the judge again.
   */
  async reportRun(p: Principal, id: string, raw: unknown): Promise<GoalView> {
    const goal = await this.findOwned(p, id);
    this.validate('goal-run-report', raw);
    const req = raw as { runId: string; costUsd?: number; output?: unknown };
    const [result] = await this.continuation.settle(
      [{ goal, intent: { kind: 'record', outcome: { runId: req.runId, status: 'reported', costUsd: req.costUsd, output: req.output } } }],
      { now: await this.clock.now(), onNoVerdict: 'refuse' },
    );
    return toGoalView(result.goal ?? (await this.findOwned(p, id)));
  }

  /** Closes a goal inside the caller's transaction: terminal state, continuation disarmed, goal.closed. */
  async closeIn(m: EntityManager, g: GoalEntity, finalState: FinalGoalState, now: Date): Promise<void> {
    const events = closeGoal(g, finalState, now);
    await this.persist(m, g);
    await this.events.appendMany(this.continuation.entries(g, events), { manager: m });
  }

  /** Writes every mutable column of a locked goal in one UPDATE (no read-before-write). */
  async persist(m: EntityManager, g: GoalEntity): Promise<void> {
    await this.store.persist(m, g);
  }

  private armedSlot(g: GoalEntity, now: Date, immediate: boolean): Date | null {
    return this.continuation.armedSlot(g, now, immediate);
  }

  private pollMs(g: GoalEntity): number {
    return this.continuation.pollMs(g);
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
      if (error) throw new ValidationError('criteria is not a valid JSON Schema.', { violations: [{ path: `/criteria${error.path}`, message: error.message, keyword: 'schema' }] });
    }
  }

  /** `schedule`, `commitment` and `worker` apply to the modes that use them, and commitment mode needs its instant. */
  private checkModeExtensions(mode: GoalContinuationMode, req: UpdateBody, entering = true): void {
    if (!RUN_MODES.includes(mode) && (req.worker !== undefined || req.workflowId !== undefined)) throw new ValidationError(`worker and workflowId do not apply to ${mode} continuation.`, { mode });
    if (!usesSchedule(mode) && req.schedule !== undefined) throw new ValidationError('schedule applies to schedule and heartbeat continuation only.', { mode });
    if (mode !== 'commitment' && req.commitment !== undefined) throw new ValidationError('commitment applies to commitment continuation only.', { mode });
    if (mode === 'commitment' && entering && req.commitment === undefined) {
      throw new ValidationError('commitment continuation needs commitment.at, the instant its commitment fires.', { violations: [{ path: '/commitment', message: 'is required for commitment continuation', keyword: 'required' }] });
    }
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
    const g = await this.ds.getRepository(GoalEntity).findOne({ where: inScope(scope, { id }) });
    if (!g) throw new NotFoundError('No such goal.');
    return g;
  }

  private ownedWhere(p: Principal, id: string): Record<string, unknown> {
    if (!UUID.test(id)) throw new NotFoundError('No such goal.');
    return inScope(p, { id, principal: p.principal });
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

/** The arm of a goal's continuation, named after the goal (null for manual: nothing is armed). */
export function armRefOf(goalId: string, mode: GoalContinuationMode): string | null {
  if (mode === 'schedule') return `goal:${goalId}:continuation`;
  if (mode === 'commitment') return `goal:${goalId}:commitment`;
  if (mode === 'heartbeat') return `goal:${goalId}:heartbeat`;
  return null;
}

type RunMode = Exclude<GoalContinuationMode, 'manual'>;

function usesSchedule(mode: GoalContinuationMode): boolean {
  return mode === 'schedule' || mode === 'heartbeat';
}

/** A client never sets the state: completion is the judge's, the rest have their own verbs. */
function refuseClientState(body: Record<string, unknown>, creating: boolean): void {
  if (!body || typeof body !== 'object' || Array.isArray(body) || body.state === undefined) return;
  if (creating && body.state === 'active') return;
  throw new UnprocessableError('validation_error', 'The goal state is set by the host: only the judge can satisfy a goal; use pause, resume or abandon.', {
    state: body.state,
  });
}

