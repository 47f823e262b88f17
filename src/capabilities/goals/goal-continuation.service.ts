import { Inject, Injectable } from '@nestjs/common';
import { GoalRunOutcome, GoalVerdict, GoalWorkSubject } from '@openwop-host/plugin-sdk';
import { DataSource, EntityManager } from 'typeorm';
import { ConflictError, DomainError } from '../../platform/errors/domain-error';
import { AppendEntry, EventLogService, HOST_STREAM } from '../../platform/events/event-log.service';
import type { TenantScope } from '../../platform/identity/principal';
import { GoalExtensionsService } from './goal-extensions.service';
import { GoalWorkerSelector } from './goal-worker-selector.service';
import { crossedBound, nextDueAt, nextSlot } from './goal-policy';
import { hydrateGoals } from './goal-rows';
import { GoalStore } from './goal-store';
import { GoalEntity, GoalState } from './goal.entity';
import { GOALS_SETTINGS, GoalsSettings } from './goals.settings';
import { ExtensionFault } from '../../platform/errors/internal-fault';

const DEFAULT_POLL_MS = 1000;

export type FinalGoalState = Exclude<GoalState, 'active'>;

/** What one iteration of a goal came to, before anything is written. */
export type ContinuationIntent =
  /** A bound was found crossed before any run reported: close the goal. */
  | { kind: 'close-bound' }
  /** Nothing to start now (paused, manual, not armed, or the dispatch was refused): re-arm. */
  | { kind: 'rearm' }
  /** The worker failed: spend no iteration, look again after the retry delay. */
  | { kind: 'retry' }
  /** The run is still running: remember it and look again after the worker's poll interval. */
  | { kind: 'poll'; runId: string }
  /** A contributing run ended (or was reported): judge it, record it once, re-arm or close. */
  | { kind: 'record'; outcome: GoalRunOutcome };

export interface ContinuationItem {
  /** The goal as the caller last read it (the scheduler's claimed row, or the row a client owns). */
  goal: GoalEntity;
  intent: ContinuationIntent;
}

export interface ContinuationOptions {
  now: Date;
  /** The scheduler's lease owner: a goal whose claim was lost is fenced off and nothing is written for it. */
  fence?: string;
  /**
   * What to do when the judge cannot give a verdict: a client report is refused (409, nothing
   * recorded, may be reported again); a run the scheduler followed to its end counts as unsatisfied
   * (fail closed: the iteration is spent, so continuation stays bounded).
   */
  onNoVerdict: 'refuse' | 'unsatisfied';
}

export type ContinuationStatus =
  /** The run was judged (or closed the goal unjudged at a bound) and recorded. */
  | 'recorded'
  /** The run was already recorded: nothing was judged or counted again. */
  | 'duplicate'
  /** A bound closed the goal before any run reported. */
  | 'closed'
  /** The claim was given back with the goal's next due time (re-arm, retry, poll). */
  | 'released'
  /** The scheduler's claim was lost (or the goal closed meanwhile): nothing was written. */
  | 'fenced';

export interface ContinuationResult {
  status: ContinuationStatus;
  goal?: GoalEntity;
}

interface Work {
  item: ContinuationItem;
  index: number;
  intent: ContinuationIntent | { kind: 'duplicate' };
  verdict?: GoalVerdict;
  /** Found fenced before judging: left out of the transaction. */
  fenced?: boolean;
}

type Event = [string, Record<string, unknown>];

/**
 * The continuation step of standing goals: what happens to a goal once an iteration has come to
 * something (a run ended or was reported, a run is still running, nothing was due, a bound was
 * crossed): the judge's verdict (asked once per run, never past a bound), the contributing run
 * recorded once, progress and cost, the next due time or the terminal state, and the goal events.
 *
 * It is the one implementation both callers use: the scheduler hands it a whole claimed batch,
 * a client's run report hands it one goal. A batch costs a fixed number of statements whatever its
 * size: one read before judging, then one transaction that locks the goals (only those the
 * scheduler still holds), inserts the contributing runs, updates every goal and appends every event.
 */
@Injectable()
export class GoalContinuationService {
  constructor(
    private readonly ds: DataSource,
    private readonly store: GoalStore,
    private readonly events: EventLogService,
    private readonly extensions: GoalExtensionsService,
    private readonly workers: GoalWorkerSelector,
    @Inject(GOALS_SETTINGS) private readonly settings: GoalsSettings,
  ) {}

  async settle(items: ContinuationItem[], opts: ContinuationOptions): Promise<ContinuationResult[]> {
    const results: ContinuationResult[] = items.map(() => ({ status: 'fenced' }));
    const work: Work[] = items.map((item, index) => ({ item, index, intent: item.intent }));
    await this.judgeRecords(work, results, opts);
    const pending = work.filter((w) => !w.fenced);
    if (!pending.length) return results;
    return this.ds.transaction(async (m) => {
      const locked = await this.lock(m, pending.map((w) => w.item.goal), opts.fence);
      const changed = new Map<string, GoalEntity>();
      const events: AppendEntry[] = [];
      const runRows: Array<Record<string, unknown>> = [];
      const drafts = new Map<number, { draft: GoalEntity; events: Event[] }>();
      for (const w of pending) {
        const g = locked.get(w.item.goal.id);
        if (!g) {
          results[w.index] = { status: 'fenced' };
          continue;
        }
        const intent = w.intent;
        if (intent.kind === 'record') {
          if (g.state !== 'active') {
            if (opts.fence) results[w.index] = { status: 'fenced', goal: g };
            else await this.refuseInactive(m, g, intent.outcome.runId, results, w.index);
            continue;
          }
          const draft: GoalEntity = Object.assign(new GoalEntity(), g, { contributingRunIds: [...(g.contributingRunIds ?? [])] });
          const { row, events: evs } = this.record(draft, intent.outcome, w.verdict, opts);
          runRows.push(row);
          drafts.set(w.index, { draft, events: evs });
          continue;
        }
        if (intent.kind === 'duplicate') {
          results[w.index] = { status: 'duplicate', goal: this.settleDuplicate(g, opts, changed) };
          continue;
        }
        if (intent.kind === 'close-bound') {
          if (g.state !== 'active') {
            results[w.index] = { status: 'fenced', goal: g };
            continue;
          }
          events.push(...this.entries(g, closeGoal(g, 'bound-exceeded', opts.now)));
          changed.set(g.id, g);
          results[w.index] = { status: 'closed', goal: g };
          continue;
        }
        this.release(g, intent, opts.now);
        changed.set(g.id, g);
        results[w.index] = { status: 'released', goal: g };
      }
      if (runRows.length) {
        // The ledger records a run once: a run reported concurrently inserts nothing here.
        const inserted = await this.store.recordRuns(m, runRows);
        const done = new Set(inserted.map((r) => `${r.goal_id} ${r.run_id}`));
        for (const [index, { draft, events: evs }] of drafts) {
          const outcome = (work[index].intent as { outcome: GoalRunOutcome }).outcome;
          if (done.has(`${draft.id} ${outcome.runId}`)) {
            changed.set(draft.id, draft);
            events.push(...this.entries(draft, evs));
            results[index] = { status: 'recorded', goal: draft };
          } else {
            const g = locked.get(draft.id)!;
            results[index] = { status: 'duplicate', goal: this.settleDuplicate(g, opts, changed) };
          }
        }
      }
      await this.store.writeContinuation(m, [...changed.values()]);
      await this.events.appendMany(events, { manager: m });
      return results;
    });
  }

  /**
   * Before judging: one read tells, for every reported run, whether the claim is still held and
   * whether the run is already recorded (a recorded run is never judged again). Then the judges run.
   */
  private async judgeRecords(work: Work[], results: ContinuationResult[], opts: ContinuationOptions): Promise<void> {
    const records = work.filter((w) => w.intent.kind === 'record');
    if (!records.length) return;
    const fresh = (await this.ds.query(
      `SELECT g."id", g."lease_owner" AS owner, g."state" AS state,
              EXISTS (SELECT 1 FROM "goal_run" r WHERE r."tenant" = g."tenant" AND r."goal_id" = g."id" AND r."run_id" = v."run_id") AS seen
       FROM unnest($1::uuid[], $2::text[], $3::text[]) AS v("id", "tenant", "run_id")
       JOIN "goal" g ON g."id" = v."id" AND g."tenant" = v."tenant"`,
      [records.map((w) => w.item.goal.id), records.map((w) => w.item.goal.tenant), records.map((w) => (w.intent as { outcome: GoalRunOutcome }).outcome.runId)],
    )) as Array<{ id: string; owner: string | null; state: GoalState; seen: boolean }>;
    const byId = new Map(fresh.map((f) => [f.id, f]));
    await Promise.all(
      records.map(async (w) => {
        const f = byId.get(w.item.goal.id);
        const outcome = (w.intent as { outcome: GoalRunOutcome }).outcome;
        if (!f || (opts.fence && f.owner !== opts.fence)) {
          w.fenced = true;
          results[w.index] = { status: 'fenced', goal: w.item.goal };
          return;
        }
        if (f.seen) {
          w.intent = { kind: 'duplicate' };
          return;
        }
        if (f.state !== 'active') {
          if (opts.fence) {
            w.fenced = true;
            results[w.index] = { status: 'fenced', goal: w.item.goal };
            return;
          }
          throw new ConflictError('goal_not_active', `The goal is ${f.state}; it takes no more runs.`, { state: f.state });
        }
        const before = w.item.goal;
        const cost = costOf(outcome);
        // Don't invoke the judge past a bound; an escalated run waits for a human and is not judged (RFC 0044).
        if (crossedBound({ ...before, costUsd: before.costUsd + cost }, opts.now) || outcome.escalated) return;
        w.verdict = await this.judge(before, outcome, opts);
      }),
    );
  }

  /** Applies one recorded run to the (locked, copied) goal; returns its goal_run row and events. */
  private record(g: GoalEntity, outcome: GoalRunOutcome, verdict: GoalVerdict | undefined, opts: ContinuationOptions): { row: Record<string, unknown>; events: Event[] } {
    g.costUsd += costOf(outcome);
    g.contributingRunIds = [...(g.contributingRunIds ?? []), outcome.runId];
    // The scheduler only records the outcome of the goal's in-flight dispatch.
    const wasPending = g.pendingRunId === outcome.runId || opts.fence !== undefined;
    if (wasPending) {
      g.pendingRunId = null;
      g.dispatchKey = null;
    }
    const judged = !crossedBound(g, opts.now) && verdict !== undefined;
    const events: Event[] = [];
    if (!judged) {
      events.push(...closeGoal(g, outcome.escalated && !crossedBound(g, opts.now) ? 'escalated' : 'bound-exceeded', opts.now));
    } else {
      g.iterations += 1;
      g.lastVerdict = { satisfied: verdict.satisfied, confidence: verdict.confidence, runId: outcome.runId };
      events.push(['goal.evaluated', { goalId: g.id, satisfied: verdict.satisfied, confidence: verdict.confidence, runId: outcome.runId, iterations: g.iterations }]);
      if (verdict.satisfied) {
        events.push(...closeGoal(g, 'satisfied', opts.now));
      } else if (g.bounds.maxLoopIterations !== undefined && g.iterations >= g.bounds.maxLoopIterations) {
        // The Nth unsatisfied verdict closes the goal: no N+1th run is ever started.
        events.push(...closeGoal(g, 'bound-exceeded', opts.now));
      } else if (wasPending) {
        g.nextDueAt = nextDueAt(g, opts.now, { slot: this.armedSlot(g, opts.now, false), pollMs: this.pollMs(g) });
      }
    }
    if (opts.fence) {
      g.leaseOwner = null;
      g.leaseExpiresAt = null;
    }
    g.updatedAt = opts.now;
    const row = {
      tenant: g.tenant,
      goal_id: g.id,
      run_id: outcome.runId,
      ordinal: g.contributingRunIds.length,
      status: outcome.status,
      cost_usd: outcome.costUsd ?? null,
      satisfied: judged ? verdict.satisfied : null,
      confidence: judged ? verdict.confidence : null,
      recorded_at: opts.now.toISOString(),
    };
    return { row, events };
  }

  /** Gives the claim back with the goal's next due time, computed from the locked row. */
  private release(g: GoalEntity, intent: Extract<ContinuationIntent, { kind: 'rearm' | 'retry' | 'poll' }>, now: Date): void {
    if (intent.kind === 'poll' && g.state === 'active') g.pendingRunId = intent.runId;
    let due = nextDueAt(g, now, { slot: this.armedSlot(g, now, false), pollMs: this.pollMs(g) });
    if (intent.kind === 'retry' && g.state === 'active') {
      const retry = new Date(now.getTime() + this.settings.retryDelayMs);
      due = due && due < retry ? due : retry;
    }
    g.nextDueAt = due;
    g.leaseOwner = null;
    g.leaseExpiresAt = null;
  }

  /**
   * The scheduler followed a run that was already recorded (reported by a client too): finish the
   * iteration without recording anything twice. A client's repeated report changes nothing.
   */
  private settleDuplicate(g: GoalEntity, opts: ContinuationOptions, changed: Map<string, GoalEntity>): GoalEntity {
    if (!opts.fence) return g;
    g.pendingRunId = null;
    g.dispatchKey = null;
    g.leaseOwner = null;
    g.leaseExpiresAt = null;
    g.nextDueAt = nextDueAt(g, opts.now, { slot: this.armedSlot(g, opts.now, false), pollMs: this.pollMs(g) });
    g.updatedAt = opts.now;
    changed.set(g.id, g);
    return g;
  }

  private async refuseInactive(m: EntityManager, g: GoalEntity, runId: string, results: ContinuationResult[], index: number): Promise<void> {
    const again = (await m.query(`SELECT 1 FROM "goal_run" WHERE "tenant" = $1 AND "goal_id" = $2 AND "run_id" = $3`, [g.tenant, g.id, runId])) as unknown[];
    if (again.length) {
      results[index] = { status: 'duplicate', goal: g };
      return;
    }
    throw new ConflictError('goal_not_active', `The goal is ${g.state}; it takes no more runs.`, { state: g.state });
  }

  /** The goals locked for update, in id order (and only those `fence` still holds, when given). */
  private async lock(m: EntityManager, goals: GoalEntity[], fence?: string): Promise<Map<string, GoalEntity>> {
    const unique = [...new Map(goals.map((g) => [g.id, g])).values()];
    const raw = (await m.query(
      `SELECT g.* FROM "goal" g
       JOIN unnest($1::uuid[], $2::text[]) AS v("id", "tenant") ON g."id" = v."id" AND g."tenant" = v."tenant"
       ${fence ? 'WHERE g."lease_owner" = $3' : ''}
       ORDER BY g."id" FOR UPDATE OF g`,
      fence ? [unique.map((g) => g.id), unique.map((g) => g.tenant), fence] : [unique.map((g) => g.id), unique.map((g) => g.tenant)],
    )) as Array<Record<string, unknown>>;
    return new Map(hydrateGoals(this.ds, raw).map((g) => [g.id, g]));
  }

  /** Goal events, appended to the tenant's host stream (correlated by goal id). */
  entries(g: GoalEntity, events: Event[]): AppendEntry[] {
    return events.map(([type, payload]) => ({ scope: scopeOf(g), streamId: HOST_STREAM, type, payload, correlationId: g.id }));
  }

  /**
   * When the goal's arm next asks to be looked at (null when nothing is armed): the next slot of a
   * schedule, the next tick of a heartbeat, or the instant of an armed commitment.
   */
  armedSlot(g: GoalEntity, now: Date, immediate: boolean): Date | null {
    if (g.state !== 'active' || g.paused) return null;
    if (g.continuationMode === 'commitment') return g.commitmentAt ? new Date(g.commitmentAt) : null;
    if ((g.continuationMode !== 'schedule' && g.continuationMode !== 'heartbeat') || !g.schedule) return null;
    if (immediate && 'intervalMs' in g.schedule) return now;
    return nextSlot(g.schedule, now);
  }

  pollMs(g: GoalEntity): number {
    const w = this.workers.workerOf(g);
    return Math.max(10, w?.pollIntervalMs ?? DEFAULT_POLL_MS);
  }

  /** The goal as its worker and judge see it (no credentials, nothing of another tenant). */
  subjectOf(g: GoalEntity): GoalWorkSubject {
    const s: GoalWorkSubject = { goalId: g.id, tenant: g.tenant, objective: g.objective, iteration: g.iterations + 1 };
    if (g.workspace) s.workspace = g.workspace;
    if (g.principal) s.principal = g.principal;
    if (g.armRef) s.armRef = g.armRef;
    if (g.workflowId) s.workflowId = g.workflowId;
    if (g.bounds.maxCostUsd !== undefined) s.remainingCostUsd = Math.max(0, g.bounds.maxCostUsd - g.costUsd);
    return s;
  }

  private async judge(g: GoalEntity, run: GoalRunOutcome, opts: ContinuationOptions): Promise<GoalVerdict> {
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
      if (typeof v?.satisfied !== 'boolean') throw new ExtensionFault('the judge returned no boolean verdict');
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
}

/** The terminal transition in memory (continuation disarmed); returns the goal.closed event to append. */
export function closeGoal(g: GoalEntity, finalState: FinalGoalState, now: Date): Event[] {
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

export function scopeOf(g: Pick<GoalEntity, 'tenant' | 'workspace'>): TenantScope {
  return g.workspace ? { tenant: g.tenant, workspace: g.workspace } : { tenant: g.tenant };
}

function costOf(outcome: GoalRunOutcome): number {
  return outcome.costUsd !== undefined && Number.isFinite(outcome.costUsd) && outcome.costUsd > 0 ? outcome.costUsd : 0;
}
