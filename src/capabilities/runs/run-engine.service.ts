import { randomUUID } from 'node:crypto';
import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { InterruptRequest, NodeExecutionContext, NodeExecutionError, ToolReplayPolicy } from '@openwop-host/plugin-sdk';
import { DataSource, EntityManager } from 'typeorm';
import { isDatabaseUnavailable } from '../../platform/database/database-driver';
import { DatabaseNotifications, EVENTS_CHANNEL, RUNS_CHANNEL } from '../../platform/database/database-notifications';
import { BatchEvent, EventLogService } from '../../platform/events/event-log.service';
import { RunEntity } from '../../platform/events/event.entities';
import { HealthService } from '../../platform/health/health.service';
import type { Principal } from '../../platform/identity/principal';
import { ApprovalsService } from '../approvals';
import { NodeExecutorRegistry, RegisteredExecutor } from './node-executor-registry.service';
import { RunNodeEntity, RunNodeStatus } from './run-node.entity';
import { RunTrace } from './run-tracing';
import { RunMetrics } from './runs.metrics';
import { RUNS_SETTINGS, RunsSettings } from './runs.settings';
import { DagNode, nodeInputs, predecessors, sinks, templateConfig, WorkflowDefinition } from './workflow-definition';
import { ActivityLedger, effectRunner } from '../../platform/idempotency/activity-ledger.service';

/** The approval-gate subject kind of suspended run nodes. */
export const RUN_GATE_SUBJECT = 'run-node';

/** The resolved RFC 0058 bounds of a run (stored in `configurable`). */
export interface RunBounds {
  runTimeoutMs: number;
  maxLoopIterations: number;
  maxCostUsd: number;
}

type StopReason = 'cancel' | 'timeout' | 'lease' | 'shutdown' | 'pause';

/** An operator's pause of a run (stored as `metadata.pause` on the run row until the run is resumed). */
export interface PauseRequest {
  drainPolicy: 'immediate' | 'drain-current-node';
  reason?: string;
  requestedAt: string;
  pausedAt?: string;
  /** The status to return to on resume (`pending` for a run paused before it started). */
  fromStatus?: string;
  idempotencyKey?: string;
}

class LeaseLost extends Error {}
/** The engine's own write of a run failed (not a node): the run is retried or failed as a whole. */
class EngineWriteError extends Error {
  constructor(
    readonly cause: unknown,
    /** The database was unavailable for the whole retry window. */
    readonly unavailable: boolean,
  ) {
    super(`the run engine could not write the run: ${(cause as Error)?.message ?? String(cause)}`);
    this.name = 'EngineWriteError';
  }
}
/** What a suspended node asked for. */
type SuspendRequest = InterruptRequest & { artifactType?: string };

class Suspend extends Error {
  constructor(readonly request: SuspendRequest) {
    super('suspend');
  }
}

/** The run status of a run suspended on an interrupt of each kind (run-snapshot.schema.json). */
export const WAITING_STATUS: Record<InterruptRequest['kind'], string> = {
  approval: 'waiting-approval',
  clarification: 'waiting-input',
  'external-event': 'waiting-external',
};
export const WAITING_STATUSES = Object.values(WAITING_STATUS);

interface NodeWrite {
  nodeId: string;
  typeId: string;
  status: RunNodeStatus;
  attempt: number;
  outputs?: Record<string, unknown> | null;
  error?: { code: string; message: string } | null;
  gateId?: string | null;
}

interface RunUpdate {
  status?: string;
  /** Stamp `metadata.pause.pausedAt` (the run is paused by this write). */
  paused?: boolean;
  outputs?: Record<string, unknown>;
  error?: { code: string; message: string; details?: Record<string, unknown> };
  terminal?: boolean;
  release?: boolean;
}

/** A run row as a claim returns it (and as a run created here is claimed by its own insert). */
export interface ClaimedRow {
  id: string;
  tenant: string;
  workspace: string | null;
  principal: string | null;
  status: string;
  workflow_id: string;
  definition: WorkflowDefinition;
  inputs: Record<string, unknown> | null;
  configurable: Record<string, unknown> | null;
  scopes: string[] | null;
  fence: number;
  cancel_requested: boolean;
  node_executions: number;
  cost_usd: number;
  started_at: Date | null;
  trace_parent?: string | null;
  trace_state?: string | null;
  /** `fork` ({sourceRunId, mode, fromSeq}) on a run created by POST /v1/runs/{runId}:fork. */
  metadata?: Record<string, unknown> | null;
}

interface Execution {
  runId: string;
  abort: AbortController;
  reason?: StopReason;
  done: Promise<void>;
  /** Set by the execution: asks it to pause (an operator's `:pause` seen on this replica). */
  pause?: (request: PauseRequest) => void;
}

function rowsOf<T>(res: unknown): T[] {
  // pg through TypeORM answers [rows, count] for UPDATE ... RETURNING, rows for INSERT/SELECT.
  if (Array.isArray(res) && res.length === 2 && Array.isArray(res[0]) && typeof res[1] === 'number') return res[0] as T[];
  return res as T[];
}

const TERMINAL = new Set(['completed', 'failed', 'cancelled']);
const CLAIMABLE = `"kind" = 'workflow' AND "status" IN ('pending', 'running', 'cancelling') AND ("lease_expires_at" IS NULL OR "lease_expires_at" < now())`;

/**
 * Claims the oldest claimable runs for owner $1, leased for $2 ms, at most $3 of them. Its order and
 * predicate are those of the partial index `run_claimable_idx`, so a claim reads the first entries of
 * that index instead of sorting the whole backlog.
 */
export const CLAIM_RUNS_SQL = `WITH c AS (SELECT "id" FROM "run" WHERE ${CLAIMABLE} ORDER BY "created_at" LIMIT $3 FOR UPDATE SKIP LOCKED)
  UPDATE "run" r SET "lease_owner" = $1, "lease_expires_at" = now() + ($2::int * interval '1 millisecond'), "fence" = r."fence" + 1
  FROM c WHERE r."id" = c."id" RETURNING r.*`;

/**
 * The run engine. A replica claims a whole workflow run (lease on the database clock plus a fencing
 * token incremented by every claim), executes its DAG in process (independent branches in parallel,
 * bounded by `nodeConcurrency`) and persists node completions, their outputs and their events in one
 * transaction that first checks the fence: a replica that lost its lease writes nothing, and a node
 * row already `completed` is never completed again.
 *
 * Round trips are few: nodes whose executor is replay-safe (`deterministic`/`idempotent`) are
 * written in batches (before the next side-effecting node starts, before the run suspends, at the end,
 * or every 250 ms), because a replica that dies before the batch commits simply re-executes them.
 * A side-effecting node is written `running` before it starts; when a replica that takes over finds
 * such a node it fails it with `node_interrupted` instead of repeating it.
 *
 * Every replica claims runs whose lease expired (a dead replica's) or that nobody holds yet (created
 * on another replica, released from an approval gate) every `claimIntervalMs`; a run created here is
 * claimed here at once. Restarting the host therefore resumes every unfinished run.
 */
@Injectable()
export class RunEngineService implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly log = new Logger('runs.engine');
  readonly owner: string;
  private readonly executions = new Map<string, Execution>();
  private ticker?: NodeJS.Timeout;
  private claiming?: Promise<void>;
  private stopped = false;
  /** Slots promised to runs being created here, claimed by their own insert (see reserve). */
  private reserved = 0;

  constructor(
    private readonly ds: DataSource,
    private readonly events: EventLogService,
    private readonly executors: NodeExecutorRegistry,
    private readonly approvals: ApprovalsService,
    private readonly health: HealthService,
    private readonly metrics: RunMetrics,
    @Inject(RUNS_SETTINGS) private readonly settings: RunsSettings,
    private readonly ledger: ActivityLedger,
    private readonly notifications: DatabaseNotifications,
  ) {
    this.owner = `${settings.instanceId}:${randomUUID()}`;
    // The followers of a run executed here are woken by its writes in process (EventLogService.wake).
    events.localStream = (runId) => this.executions.has(runId);
  }

  onApplicationBootstrap(): void {
    this.approvals.registerSubject(RUN_GATE_SUBJECT, {
      // Inside the deciding transaction: make the run claimable again; the node reads the gate's state.
      release: (m, gate) => this.reopen(m, gate.subjectId),
      closed: (m, gate) => this.reopen(m, gate.subjectId),
      // The run row before the gate, as a cancel locks them: a resolve racing a cancel waits for it.
      lock: async (m, gate) => {
        await m.query(`SELECT 1 FROM "run" WHERE "id" = $1 FOR UPDATE`, [gate.subjectId]);
      },
    });
    if (!this.settings.executing) return;
    this.ticker = setInterval(() => void this.claimAvailable(), this.settings.claimIntervalMs);
    this.ticker.unref();
    // Another replica's unclaimed run (or handed-back lease) wakes this one at once; the ticker
    // remains the bound when notifications are missed or not delivered (the embedded engine).
    this.notifications.subscribe(RUNS_CHANNEL, () => void this.claimAvailable());
    // Resume what a previous process left (its leases may still have to expire).
    setImmediate(() => void this.claimAvailable());
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    if (this.ticker) clearInterval(this.ticker);
    await this.claiming?.catch(() => undefined);
    const running = [...this.executions.values()];
    for (const e of running) this.stop(e, 'shutdown');
    await Promise.all(running.map((e) => e.done.catch(() => undefined)));
    // Hand the leases back now, so the next process (or another replica) resumes without waiting.
    await this.ds
      .query(
        `WITH h AS (UPDATE "run" SET "lease_owner" = NULL, "lease_expires_at" = NULL WHERE "lease_owner" = $1 AND "status" NOT IN ('completed', 'failed', 'cancelled') RETURNING 1)
         SELECT (SELECT count(*) FROM h) AS "n", (SELECT count(*) FROM (SELECT pg_notify('${RUNS_CHANNEL}', '') WHERE EXISTS (SELECT 1 FROM h)) x) AS "notified"`,
        [this.owner],
      )
      .catch(() => undefined);
  }

  /** How many runs this replica is executing. */
  activeCount(): number {
    return this.executions.size;
  }

  /**
   * Promises a slot to a run about to be created here, which its own insert then claims (lease,
   * fence 1) so it starts without a claim statement of its own: true when this replica has room.
   * The caller hands the inserted row to `adopt`, or calls `unreserve` when nothing was inserted.
   */
  reserve(): boolean {
    if (this.stopped || this.executions.size + this.reserved >= this.settings.maxActiveRuns) return false;
    this.reserved++;
    return true;
  }

  unreserve(): void {
    this.reserved = Math.max(0, this.reserved - 1);
  }

  /** Starts a run its insert claimed for this replica (after `reserve`). */
  adopt(row: ClaimedRow): void {
    this.unreserve();
    if (this.stopped) {
      // Stopping: hand the lease back, as the shutdown did for the others (best effort; it expires anyway).
      void this.ds
        .query(`UPDATE "run" SET "lease_owner" = NULL, "lease_expires_at" = NULL WHERE "id" = $1 AND "lease_owner" = $2 AND "fence" = $3`, [row.id, this.owner, row.fence])
        .catch(() => undefined);
      return;
    }
    this.start(row);
  }

  /** Claims and starts one run right away (it was created or released here). Retries briefly: the caller's transaction may still be committing. */
  kick(runId: string, attempts = 5): void {
    if (this.stopped || this.executions.has(runId)) return;
    void (async () => {
      for (let i = 0; i < attempts && !this.stopped; i++) {
        if (this.executions.size + this.reserved >= this.settings.maxActiveRuns) return;
        const rows = rowsOf<ClaimedRow>(
          await this.ds.query(
            `UPDATE "run" SET "lease_owner" = $2, "lease_expires_at" = now() + ($3::int * interval '1 millisecond'), "fence" = "fence" + 1
             WHERE "id" = $1 AND ${CLAIMABLE} RETURNING *`,
            [runId, this.owner, this.settings.leaseMs],
          ),
        );
        if (rows.length) return this.start(rows[0]);
        await new Promise((r) => setTimeout(r, 20 * (i + 1)));
      }
    })().catch((e: unknown) => this.log.error({ msg: 'could not claim a run', runId, err: (e as Error).message }));
  }

  /** Signals a local execution of the run to stop for cancellation (another replica's sees it at its next heartbeat). */
  cancelLocal(runId: string): boolean {
    const e = this.executions.get(runId);
    if (!e) return false;
    this.stop(e, 'cancel');
    return true;
  }

  /** Asks a local execution of the run to pause (another replica's sees it at its next heartbeat or write). */
  pauseLocal(runId: string, request: PauseRequest): boolean {
    const e = this.executions.get(runId);
    if (!e?.pause) return false;
    e.pause(request);
    return true;
  }

  /** Claims runs nobody holds (new, released, or of a dead replica) while there is capacity. */
  claimAvailable(): Promise<void> {
    if (this.claiming || this.stopped) return this.claiming ?? Promise.resolve();
    const pass = (async () => {
      try {
        for (;;) {
          const room = this.settings.maxActiveRuns - this.executions.size - this.reserved;
          if (room <= 0 || this.stopped) break;
          const rows = rowsOf<ClaimedRow>(
            await this.ds.query(CLAIM_RUNS_SQL, [this.owner, this.settings.leaseMs, Math.min(room, 32)]),
          );
          for (const r of rows) this.start(r);
          if (rows.length < Math.min(room, 32)) break;
        }
        // A pass that worked: a failure reported earlier (the database was away) is over.
        this.health.report('runs.engine', true);
      } catch (e) {
        this.log.error({ msg: 'run claim pass failed', err: (e as Error).message });
        this.health.report('runs.engine', false, 'a run claim pass failed');
      }
    })();
    // Cleared in a later microtask, so a pass that ends synchronously cannot leave itself behind.
    const claiming: Promise<void> = pass.finally(() => {
      if (this.claiming === claiming) this.claiming = undefined;
    });
    this.claiming = claiming;
    return claiming;
  }

  private stop(e: Execution, reason: StopReason): void {
    if (e.reason) return;
    e.reason = reason;
    e.abort.abort();
  }

  private start(row: ClaimedRow): void {
    if (this.executions.has(row.id)) return;
    const exec: Execution = { runId: row.id, abort: new AbortController(), done: Promise.resolve() };
    this.executions.set(row.id, exec);
    exec.done = new RunExecution(this, row, exec)
      .run()
      .catch((e: unknown) => {
        if (!(e instanceof LeaseLost)) this.log.error({ msg: 'run execution failed', runId: row.id, err: (e as Error).message, stack: (e as Error).stack });
      })
      .finally(() => {
        this.executions.delete(row.id);
        // Work-conserving: a freed slot looks for more work at once.
        if (this.settings.executing && !this.stopped) void this.claimAvailable();
      });
  }

  private async reopen(m: EntityManager, runId: string): Promise<void> {
    await m.query(`UPDATE "run" SET "status" = 'running', "lease_owner" = NULL, "lease_expires_at" = NULL WHERE "id" = $1 AND "status" = ANY($2::text[])`, [runId, WAITING_STATUSES]);
    // Claimed here after the deciding transaction commits (other replicas find it at their next pass).
    setTimeout(() => this.kick(runId, 10), 10);
  }

  // --- used by RunExecution -----------------------------------------------------------------------

  /** @internal */ get deps() {
    return { ds: this.ds, events: this.events, executors: this.executors, approvals: this.approvals, settings: this.settings, owner: this.owner, log: this.log, metrics: this.metrics, ledger: this.ledger };
  }

  /**
   * Hands back the lease of a run this replica stopped executing because the database was away, as
   * soon as the database answers (within one lease; after it the lease has expired anyway), so a
   * claim pass resumes the run at once instead of after the lease.
   */
  /** @internal */ releaseWhenPossible(runId: string, fence: number): void {
    const until = Date.now() + this.settings.leaseMs;
    const attempt = async () => {
      if (this.stopped || Date.now() > until) return;
      try {
        await this.ds.query(
          `WITH h AS (UPDATE "run" SET "lease_owner" = NULL, "lease_expires_at" = NULL WHERE "id" = $1 AND "lease_owner" = $2 AND "fence" = $3 RETURNING 1)
           SELECT (SELECT count(*) FROM (SELECT pg_notify('${RUNS_CHANNEL}', '') WHERE EXISTS (SELECT 1 FROM h)) x) AS "notified"`,
          [runId, this.owner, fence],
        );
        if (this.settings.executing) void this.claimAvailable();
      } catch {
        setTimeout(() => void attempt(), 1000).unref();
      }
    };
    setTimeout(() => void attempt(), 1000).unref();
  }

  /** @internal */ finished(runId: string): void {
    this.runWaiters.get(runId)?.forEach((w) => w());
    this.runWaiters.delete(runId);
  }

  private readonly runWaiters = new Map<string, Set<() => void>>();

  /** Resolves when a local execution of the run ends, or after `ms` (the caller re-reads the row). */
  waitLocal(runId: string, ms: number): Promise<void> {
    return new Promise((resolve) => {
      const set = this.runWaiters.get(runId) ?? new Set();
      this.runWaiters.set(runId, set);
      const done = () => {
        clearTimeout(timer);
        set.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      set.add(done);
    });
  }
}

interface NodeOutcome {
  node: DagNode;
  safe: boolean;
  attempt: number;
  ok?: { outputs: Record<string, unknown>; costUsd: number; durationMs: number };
  failed?: { code: string; message: string };
  suspend?: SuspendRequest;
  /** The engine's own write failed while the node ran: not the node's failure. */
  engineFault?: EngineWriteError;
}

/** One claim's execution of one run. */
class RunExecution {
  private readonly d: RunEngineService['deps'];
  private readonly def: WorkflowDefinition;
  private readonly principal: Principal;
  private readonly scope: { tenant: string; workspace?: string };
  private readonly bounds: RunBounds;
  private readonly outputs = new Map<string, Record<string, unknown>>();
  private readonly state = new Map<string, RunNodeEntity>();
  private batch: BatchEvent[] = [];
  private writes: NodeWrite[] = [];
  private batchSince = 0;
  private nodeExecutions: number;
  private costUsd: number;
  private startedAtMs = Date.now();
  /** run.started is not written yet. */
  private firstStart: boolean;
  private heartbeat?: NodeJS.Timeout;
  private deadline?: NodeJS.Timeout;
  private breach?: { kind: 'run-duration' | 'loop-iterations' | 'budget-cost'; limit: number; observed: number; code: string; message: string; nodeId?: string };
  private flushing: Promise<void> = Promise.resolve();
  private trace!: RunTrace;
  /** An operator's pause this execution honours: no new node starts; `immediate` also aborts the nodes in flight. */
  private pausing?: PauseRequest;
  /**
   * The source of a `replay` fork: its nodes' recorded outcomes stand in for every node that is not
   * `deterministic` (replay.md caveats 1 and 2: no external system is called, no human asked again),
   * and the wall clock is not observed (no `durationMs`), so two replays log the same events.
   */
  private readonly replayOf?: string;
  private recorded?: Promise<Map<string, Record<string, unknown>>>;

  constructor(
    private readonly engine: RunEngineService,
    private readonly row: ClaimedRow,
    private readonly exec: Execution,
  ) {
    this.d = engine.deps;
    exec.pause = (request) => this.requestPause(request);
    this.def = row.definition;
    this.scope = { tenant: row.tenant, workspace: row.workspace ?? undefined };
    this.principal = { tenant: row.tenant, workspace: row.workspace ?? undefined, principal: row.principal ?? 'system', scopes: new Set(row.scopes ?? []), kind: 'system' };
    const c = row.configurable ?? {};
    const limits = this.d.settings.limits;
    this.bounds = {
      runTimeoutMs: typeof c.runTimeoutMs === 'number' ? c.runTimeoutMs : limits.maxRunDurationMs,
      maxLoopIterations: typeof c.maxLoopIterations === 'number' ? c.maxLoopIterations : limits.maxLoopIterations,
      maxCostUsd: typeof c.maxCostUsd === 'number' ? c.maxCostUsd : limits.maxBudgetCostUsd,
    };
    this.nodeExecutions = row.node_executions;
    this.costUsd = row.cost_usd;
    this.firstStart = row.status === 'pending';
    if (row.started_at) this.startedAtMs = new Date(row.started_at).getTime();
    const fork = row.metadata?.fork as { mode?: string; sourceRunId?: string } | undefined;
    if (fork?.mode === 'replay' && typeof fork.sourceRunId === 'string') this.replayOf = fork.sourceRunId;
  }

  /** `{durationMs}` of an event, or nothing in a replay (its events must not depend on the wall clock). */
  private took(ms: number): { durationMs?: number } {
    return this.replayOf ? {} : { durationMs: Math.max(0, ms) };
  }

  /** The outputs the replayed source run recorded for its completed nodes (same tenant). */
  private recordedOutcomes(): Promise<Map<string, Record<string, unknown>>> {
    this.recorded ??= this.d.ds
      .query(`SELECT "node_id", "outputs" FROM "run_node" WHERE "run_id" = $1 AND "tenant" = $2 AND "status" = 'completed'`, [this.replayOf, this.row.tenant])
      .then((rows: Array<{ node_id: string; outputs: Record<string, unknown> | null }>) => new Map(rows.map((r) => [r.node_id, r.outputs ?? {}])));
    return this.recorded;
  }

  private get signal(): AbortSignal {
    return this.exec.abort.signal;
  }

  async run(): Promise<void> {
    this.trace = RunTrace.start(this.row, !this.firstStart);
    try {
      await this.trace.run(() => this.execute());
    } catch (e) {
      if (e instanceof LeaseLost || this.exec.reason === 'lease' || this.exec.reason === 'shutdown') throw e;
      if ((e instanceof EngineWriteError && e.unavailable) || isDatabaseUnavailable(e)) {
        // Nothing can be written now. The lease runs out and a claim pass (here or on another
        // replica) resumes the run from what was written once the database answers again.
        this.d.log.error({ msg: 'run engine could not write to the database; the run resumes when it answers', runId: this.row.id, err: ((e instanceof EngineWriteError ? e.cause : e) as Error)?.message });
        this.requestStop('lease');
        this.engine.releaseWhenPossible(this.row.id, this.row.fence);
        return;
      }
      await this.failOnEngineFault(e);
      throw e;
    } finally {
      this.trace.end(this.exec.reason === 'cancel' ? undefined : this.exec.reason);
      clearInterval(this.heartbeat);
      clearTimeout(this.deadline);
      this.engine.finished(this.row.id);
      this.d.events.wake();
    }
  }

  /**
   * An engine fault (not a node's): the run is failed with `engine_error`, fenced, instead of being
   * claimed again and failing again after every lease expiry. Its node rows are made to agree: a node
   * written running or waiting fails with the same error, a node never started is skipped. When even
   * that cannot be written, the run is left to its lease and resumed later.
   */
  private async failOnEngineFault(e: unknown): Promise<void> {
    this.d.log.error({ msg: 'run engine fault; failing the run', runId: this.row.id, err: (e as Error)?.message, stack: (e as Error)?.stack });
    this.batch = [];
    this.writes = [];
    this.stopNodes();
    const error = { code: 'engine_error', message: 'The run engine could not execute this run.' };
    if (this.firstStart) this.queue({ type: 'run.started', payload: { workflowId: this.row.workflow_id || 'unknown', inputs: this.row.inputs ?? {} } });
    // The fault may be the definition itself (a run written by something else than POST /v1/runs).
    const nodes = Array.isArray(this.def?.nodes) ? this.def.nodes.filter((n) => n && typeof n.id === 'string') : [];
    for (const n of nodes) {
      const s = this.state.get(n.id);
      if (s?.status === 'running' || s?.status === 'waiting') {
        this.queue({ type: 'node.failed', nodeId: n.id, payload: { nodeId: n.id, error, attempts: s.attempt + 1 } });
        this.writes.push({ nodeId: n.id, typeId: n.typeId, status: 'failed', attempt: s.attempt, error });
      } else if (!s) {
        this.queue({ type: 'node.skipped', nodeId: n.id, payload: { nodeId: n.id, reason: 'engine-error' } });
        this.writes.push({ nodeId: n.id, typeId: n.typeId, status: 'skipped', attempt: 0 });
      }
    }
    this.queue({ type: 'run.failed', payload: { error, ...this.took(Date.now() - this.startedAtMs) } });
    try {
      await this.flush({ status: 'failed', error, terminal: true });
    } catch (again) {
      this.d.log.error({ msg: 'run engine could not record the failure of the run; it is retried after its lease', runId: this.row.id, err: (again as Error)?.message });
    }
  }

  private async execute(): Promise<void> {
    const { row } = this;
    if (this.firstStart) {
      const owner: Record<string, string> = { tenant: row.tenant };
      if (row.workspace) owner.workspace = row.workspace;
      if (row.principal) owner.principal = row.principal;
      this.queue({ type: 'run.started', payload: { workflowId: row.workflow_id, inputs: row.inputs ?? {}, transport: 'rest', owner } });
    } else {
      for (const n of await this.d.ds.getRepository(RunNodeEntity).find({ where: { runId: row.id } })) {
        this.state.set(n.nodeId, n);
        if (n.status === 'completed') this.outputs.set(n.nodeId, n.outputs ?? {});
      }
    }
    this.heartbeat = setInterval(() => void this.renew(), Math.max(50, Math.floor(this.d.settings.leaseMs / 3)));
    this.armDeadline();
    if (row.cancel_requested) return this.finishCancelled();
    if (this.breach) return this.finishBreached();

    // Nodes left in flight by a replica that died: repeat only what may be repeated.
    for (const n of this.def.nodes) {
      const s = this.state.get(n.id);
      if (s?.status !== 'running') continue;
      const policy = await this.replayPolicy(n);
      if (policy === 'non-deterministic') {
        const error = { code: 'node_interrupted', message: `Node ${n.id} was in flight when its replica stopped; it is not safe to repeat (replayPolicy ${policy}).` };
        this.queue({ type: 'node.failed', nodeId: n.id, payload: { nodeId: n.id, error, attempts: s.attempt + 1 } });
        this.writes.push({ nodeId: n.id, typeId: n.typeId, status: 'failed', attempt: s.attempt, error });
        return this.finishFailed(error, n.id);
      }
    }
    const failedBefore = this.def.nodes.find((n) => this.state.get(n.id)?.status === 'failed');
    if (failedBefore) {
      return this.finishFailed(this.state.get(failedBefore.id)!.error ?? { code: 'node_failed', message: 'A node failed.' }, failedBefore.id);
    }

    const inflight = new Map<string, Promise<NodeOutcome>>();
    let failure: { error: { code: string; message: string }; nodeId: string } | undefined;
    const suspended: NodeOutcome[] = [];
    const concurrency = this.d.settings.nodeConcurrency;
    for (;;) {
      if (!this.signal.aborted && !failure && !suspended.length && !this.breach && !this.pausing) {
        for (const n of this.def.nodes) {
          if (inflight.size >= concurrency) break;
          if (inflight.has(n.id) || this.outputs.has(n.id)) continue;
          if (!predecessors(this.def, n.id).every((p) => this.outputs.has(p))) continue;
          if (this.nodeExecutions + 1 > this.bounds.maxLoopIterations) {
            this.breach = { kind: 'loop-iterations', limit: this.bounds.maxLoopIterations, observed: this.nodeExecutions + 1, code: 'loop_limit', message: `The run would execute more than ${this.bounds.maxLoopIterations} nodes.`, nodeId: n.id };
            break;
          }
          this.nodeExecutions++;
          inflight.set(n.id, this.trace.node(n, () => this.launch(n)));
        }
      }
      if (!inflight.size) break;
      // Unwritten progress is written within ~250 ms even while a long node is in flight.
      let tick: NodeJS.Timeout | undefined;
      const aged = this.batch.length
        ? new Promise<'flush'>((resolve) => (tick = setTimeout(() => resolve('flush'), Math.max(0, 250 - (Date.now() - this.batchSince)))))
        : undefined;
      const raced: NodeOutcome | 'flush' = await Promise.race<NodeOutcome | 'flush'>(aged ? [...inflight.values(), aged] : [...inflight.values()]);
      clearTimeout(tick);
      if (raced === 'flush') {
        await this.flush();
        continue;
      }
      const outcome = raced;
      inflight.delete(outcome.node.id);
      if (outcome.engineFault) {
        this.stopNodes();
        await Promise.allSettled(inflight.values());
        throw outcome.engineFault;
      }
      const n = outcome.node;
      // Executors are looked up by their registered typeId (aliases folded); an unserved one is `unknown`.
      this.d.metrics.nodeFinished(this.d.executors.get(n.typeId)?.typeId ?? 'unknown', outcome.ok ? 'completed' : outcome.suspend ? 'suspended' : this.signal.aborted || this.breach ? 'cancelled' : 'failed');
      if (outcome.ok) {
        this.outputs.set(n.id, outcome.ok.outputs);
        this.queue({ type: 'node.completed', nodeId: n.id, payload: { nodeId: n.id, outputs: outcome.ok.outputs, ...this.took(outcome.ok.durationMs) } });
        this.writes.push({ nodeId: n.id, typeId: n.typeId, status: 'completed', attempt: outcome.attempt, outputs: outcome.ok.outputs, error: null, gateId: null });
        this.addCost(outcome.ok.costUsd, n.id);
        if (!outcome.safe) await this.flush();
      } else if (outcome.suspend) {
        suspended.push(outcome);
      } else if (outcome.failed && this.exec.reason === 'pause' && !this.breach) {
        // Aborted by an immediate pause: nothing is written for it, so it runs again on resume.
      } else if (outcome.failed) {
        if (this.signal.aborted || this.breach) {
          this.queue({ type: 'node.cancelled', nodeId: n.id, payload: { nodeId: n.id, reason: this.breach ? this.breach.code : (this.exec.reason ?? 'aborted') } });
          this.writes.push({ nodeId: n.id, typeId: n.typeId, status: 'cancelled', attempt: outcome.attempt, error: outcome.failed });
        } else {
          this.queue({ type: 'node.failed', nodeId: n.id, payload: { nodeId: n.id, error: outcome.failed, attempts: outcome.attempt + 1 } });
          this.writes.push({ nodeId: n.id, typeId: n.typeId, status: 'failed', attempt: outcome.attempt, error: outcome.failed });
          if (!failure) {
            failure = { error: outcome.failed, nodeId: n.id };
            this.stopNodes();
          }
        }
      }
      if (this.batch.length >= 200 || (this.batch.length && Date.now() - this.batchSince > 250)) await this.flush();
    }

    if (this.exec.reason === 'lease' || this.exec.reason === 'shutdown') return;
    if (this.exec.reason === 'cancel') return this.finishCancelled();
    if (this.breach) return this.finishBreached();
    if (failure) return this.finishFailed(failure.error, failure.nodeId);
    if (suspended.length) return this.suspend(suspended);
    // Paused (also when the drained node was the last one: the run completes only after its resume).
    if (this.pausing) return this.finishPaused();
    const out: Record<string, unknown> = {};
    for (const s of sinks(this.def)) out[s.id] = this.outputs.get(s.id) ?? {};
    this.queue({ type: 'run.completed', payload: { outputs: out, ...this.took(Date.now() - this.startedAtMs) } });
    await this.flush({ status: 'completed', outputs: out, terminal: true });
  }

  /** Adds a reported cost; crossing `maxCostUsd` (strictly greater) breaches `budget-cost` and stops the nodes in flight. */
  private addCost(usd: number, nodeId: string): void {
    if (!(usd > 0) || !Number.isFinite(usd)) return;
    this.costUsd += usd;
    if (this.costUsd > this.bounds.maxCostUsd && !this.breach) {
      this.breach = { kind: 'budget-cost', limit: this.bounds.maxCostUsd, observed: this.costUsd, code: 'cost_limit', message: `The run cost ${this.costUsd} USD, over its ${this.bounds.maxCostUsd} USD bound.`, nodeId };
      this.stopNodes();
    }
  }

  /** Aborts the nodes in flight (failure or breach) without marking the run cancelled. */
  private nodeAbort = new AbortController();
  private stopNodes(): void {
    this.nodeAbort.abort();
  }

  private async replayPolicy(n: DagNode): Promise<ToolReplayPolicy> {
    const ex = this.d.executors.get(n.typeId);
    if (!ex) return 'non-deterministic';
    if (ex.provider.replayPolicyOf) return ex.provider.replayPolicyOf(n.config, this.principal);
    return ex.replayPolicy;
  }

  private async launch(n: DagNode): Promise<NodeOutcome> {
    const ex = this.d.executors.get(n.typeId) as RegisteredExecutor;
    const prior = this.state.get(n.id);
    const attempt = prior ? prior.attempt + (prior.status === 'running' ? 1 : 0) : 0;
    const base = { node: n, attempt, safe: true };
    try {
      if (!ex) throw Object.assign(new Error(`No executor serves ${n.typeId}.`), { code: 'unknown_node_type' });
      const policy = await this.replayPolicy(n);
      base.safe = policy !== 'non-deterministic';
      this.queue({ type: 'node.started', nodeId: n.id, payload: { nodeId: n.id, typeId: n.typeId, attempt } });
      // The in-flight marker, so the run's nodeStates show the node running as its events do. A
      // replay-safe node's marker rides the next batch (a node that finishes first is written only
      // `completed`); a side-effecting node's is written before it starts, so a replica taking over
      // knows it may have had effects.
      this.writes.push({ nodeId: n.id, typeId: n.typeId, status: 'running', attempt });
      if (!base.safe) await this.flush({ current: n.id });
      if (this.replayOf && policy !== 'deterministic') {
        // A replay never repeats an effect or asks a human again: the source's recorded outcome, or fail closed.
        const outputs = (await this.recordedOutcomes()).get(n.id);
        if (!outputs) throw new NodeExecutionError('replay_source_missing', `The source run ${this.replayOf} has no recorded outcome for node ${n.id} (replayPolicy ${policy}); a replay does not execute it.`);
        return { ...base, ok: { outputs, costUsd: 0, durationMs: 0 } };
      }
      const upstream: Record<string, unknown> = Object.fromEntries([...this.outputs.entries()]);
      const config = templateConfig(n.config, { inputs: this.row.inputs ?? {}, nodes: upstream }) as Record<string, unknown>;
      const signal = AbortSignal.any([this.signal, this.nodeAbort.signal]);
      const started = Date.now();
      const ctx: NodeExecutionContext = {
        runId: this.row.id,
        nodeId: n.id,
        typeId: n.typeId,
        config,
        runInputs: this.row.inputs ?? {},
        inputs: nodeInputs(this.def, n.id, this.outputs),
        attempt,
        principal: { tenant: this.principal.tenant, workspace: this.principal.workspace, principal: this.principal.principal, scopes: this.principal.scopes },
        signal,
        emit: async (type, payload, opts) => {
          await this.flush();
          const v = await this.d.events
            .append(this.scope, this.row.id, type, payload, { nodeId: n.id, correlationId: opts?.correlationId, causationId: opts?.causationId })
            .catch((e: unknown) => Promise.reject(new EngineWriteError(e, isDatabaseUnavailable(e))));
          // RFC 0026 provider.usage is the protocol's durable cost record (RFC 0084): count it now.
          if (type === 'provider.usage' && typeof payload.costEstimateUsd === 'number' && (payload.currency === undefined || payload.currency === 'USD')) {
            this.addCost(payload.costEstimateUsd, n.id);
          }
          return { eventId: v.eventId };
        },
        awaitApproval: (req) => this.awaitApproval(n, req),
        // A replay's default-deny guard at the effect seam: a node declared deterministic that reaches an effect fails closed.
        effect: this.replayOf
          ? () => Promise.reject(new NodeExecutionError('replay_source_missing', `Node ${n.id} reached an external effect during a replay of ${this.replayOf}; a replay performs none.`))
          : effectRunner(this.d.ledger, { tenant: this.row.tenant, runId: this.row.id, nodeId: n.id }, signal),
        interrupt: (req) => this.interrupt(n, req),
      };
      const result = await ex.provider.execute(ctx);
      const outputs = result && typeof result.outputs === 'object' && result.outputs && !Array.isArray(result.outputs) ? result.outputs : {};
      const costUsd = typeof result?.costUsd === 'number' && result.costUsd > 0 ? result.costUsd : 0;
      return { ...base, ok: { outputs, costUsd, durationMs: Date.now() - started } };
    } catch (e) {
      if (e instanceof Suspend) return { ...base, suspend: e.request };
      if (e instanceof EngineWriteError) return { ...base, engineFault: e };
      if (e instanceof LeaseLost) {
        // flush() already stopped the execution: nothing more is written by this claim.
        return { ...base, failed: { code: 'lease_lost', message: 'The run lease was lost.' } };
      }
      const code = typeof (e as { code?: unknown }).code === 'string' && (e as { code: string }).code ? (e as { code: string }).code : 'node_failed';
      const message = (e as Error).message || 'The node failed.';
      // A failed execution may still have cost something (e.g. a tool call that errored).
      const spent = (e as { costUsd?: unknown }).costUsd;
      if (typeof spent === 'number') this.addCost(spent, n.id);
      return { ...base, failed: { code, message } };
    }
  }

  /** The node's gate state, or Suspend when there is no decided gate yet. */
  private async awaitApproval(n: DagNode, req: { title: string; artifactType?: string }): Promise<'granted' | 'denied'> {
    const gate = await this.decidedGate(n, { kind: 'approval', ...req });
    return gate.state === 'granted' ? 'granted' : 'denied';
  }

  /**
   * ctx.interrupt: the resume value of the node's resolved gate; Suspend while there is none (the
   * gate is opened when the run parks). Re-executing the node after a restart or a takeover reads
   * the same gate, so an interrupt is asked once per node execution and answered from the database.
   */
  private async interrupt(n: DagNode, req: InterruptRequest): Promise<unknown> {
    const gate = await this.decidedGate(n, req);
    if (gate.state === 'granted') return gate.resume_value ?? {};
    if (gate.state === 'expired') throw new NodeExecutionError('interrupt_expired', `The ${req.kind} interrupt of node ${n.id} expired before it was resolved.`);
    if (gate.state === 'cancelled') throw new NodeExecutionError('interrupt_cancelled', `The ${req.kind} interrupt of node ${n.id} was cancelled.`);
    throw new NodeExecutionError('interrupt_rejected', `The ${req.kind} interrupt of node ${n.id} was rejected.`);
  }

  private async decidedGate(n: DagNode, req: SuspendRequest): Promise<{ state: string; resume_value: unknown }> {
    const gateId = this.state.get(n.id)?.gateId;
    if (gateId) {
      const [gate] = (await this.d.ds.query(`SELECT "state", "resume_value" FROM "approval" WHERE "id" = $1 AND "tenant" = $2`, [gateId, this.row.tenant])) as Array<{ state: string; resume_value: unknown }>;
      if (gate && gate.state !== 'pending') {
        const resumeValue = gate.state === 'granted' ? (gate.resume_value ?? { action: 'accept' }) : { action: 'reject' };
        this.queue({ type: 'node.resumed', nodeId: n.id, payload: { nodeId: n.id, interruptId: gateId, resumeValue } });
        return gate;
      }
      if (gate) throw new Suspend(req); // still pending (another node's gate released the run)
    }
    throw new Suspend(req);
  }

  /** Opens the gates of suspended nodes (reusing a still-pending one) and parks the run in the `waiting-*` status of the first one's kind. */
  private async suspend(nodes: NodeOutcome[]): Promise<void> {
    await this.flush();
    await this.d.ds.transaction(async (m) => {
      await this.fence(m, { status: WAITING_STATUS[nodes[0].suspend?.kind ?? 'approval'] ?? 'waiting-approval', release: true }, nodes[0].node.id);
      for (const o of nodes) {
        const n = o.node;
        let gateId = this.state.get(n.id)?.gateId ?? null;
        const [pending] = gateId ? ((await m.query(`SELECT "state" FROM "approval" WHERE "id" = $1`, [gateId])) as Array<{ state: string }>) : [];
        if (!gateId || pending?.state !== 'pending') {
          const gate = await this.d.approvals.open(
            m,
            {
              subjectKind: RUN_GATE_SUBJECT,
              subjectId: this.row.id,
              tenant: this.row.tenant,
              workspaceKey: this.row.workspace ?? '',
              artifactRef: `run:${this.row.id}#${n.id}`,
              artifactType: o.suspend?.artifactType ?? 'run-step',
              title: o.suspend?.title ?? `Approve step ${n.id}`,
              runStep: { runId: this.row.id, nodeId: n.id, workflowId: this.row.workflow_id ?? null },
              interrupt: {
                kind: o.suspend?.kind ?? 'approval',
                resumeSchema: o.suspend?.resumeSchema,
                data: o.suspend?.data,
                quorum: o.suspend?.requiredApprovals,
                rejectionPolicy: o.suspend?.rejectionPolicy,
              },
            },
            this.principal,
          );
          gateId = gate.id;
        }
        await this.writeNodes(m, [{ nodeId: n.id, typeId: n.typeId, status: 'waiting', attempt: o.attempt, gateId }]);
        await this.d.events.appendBatch(this.scope, this.row.id, [{ type: 'node.suspended', nodeId: n.id, payload: { nodeId: n.id, interruptId: gateId, kind: o.suspend?.kind ?? 'approval', key: `${RUN_GATE_SUBJECT}:${this.row.id}:${gateId}` } }], m);
      }
    });
    this.trace.status(WAITING_STATUS[nodes[0].suspend?.kind ?? 'approval'] ?? 'waiting-approval');
    this.d.events.wake();
  }

  private async finishFailed(error: { code: string; message: string }, nodeId?: string): Promise<void> {
    this.skipRemaining('upstream-failed');
    this.queue({ type: 'run.failed', payload: { error, ...(nodeId ? { failedNodeId: nodeId } : {}), ...this.took(Date.now() - this.startedAtMs) } });
    await this.flush({ status: 'failed', error, terminal: true });
  }

  private async finishBreached(): Promise<void> {
    const b = this.breach!;
    this.queue({ type: 'cap.breached', nodeId: b.nodeId, payload: { kind: b.kind, limit: b.limit, observed: b.observed, ...(b.nodeId ? { nodeId: b.nodeId } : {}) } });
    await this.finishFailed({ code: b.code, message: b.message });
  }

  private requestPause(request: PauseRequest): void {
    if (this.pausing || this.exec.reason) return;
    this.pausing = request;
    if (request.drainPolicy === 'immediate') this.requestStop('pause');
  }

  /** Parks the run in `paused`, its lease released (a paused run holds none), with `run.paused`. */
  private async finishPaused(): Promise<void> {
    const p = this.pausing!;
    this.queue({ type: 'run.paused', payload: { drainPolicy: p.drainPolicy, ...(p.reason ? { reason: p.reason } : {}) } });
    await this.flush({ status: 'paused', release: true, paused: true });
  }

  private async finishCancelled(): Promise<void> {
    this.skipRemaining('run-cancelled');
    // A node suspended on a gate: close the gate (nobody needs to decide any more).
    this.queue({ type: 'run.cancelled', payload: { reason: 'cancel-requested', ...this.took(Date.now() - this.startedAtMs) } });
    await this.flush({ status: 'cancelled', terminal: true });
  }

  private skipRemaining(reason: string): void {
    for (const n of this.def.nodes) {
      const s = this.state.get(n.id)?.status;
      if (this.outputs.has(n.id) || s === 'failed' || s === 'cancelled' || s === 'skipped') continue;
      if (this.writes.some((w) => w.nodeId === n.id && (w.status === 'failed' || w.status === 'cancelled' || w.status === 'completed'))) continue;
      this.queue({ type: 'node.skipped', nodeId: n.id, payload: { nodeId: n.id, reason } });
      this.writes.push({ nodeId: n.id, typeId: n.typeId, status: 'skipped', attempt: this.state.get(n.id)?.attempt ?? 0 });
    }
  }

  private queue(e: BatchEvent): void {
    if (!this.batch.length) this.batchSince = Date.now();
    this.batch.push(e);
  }

  /** Writes the pending node rows and events, fenced, in one transaction (serialized per run). */
  private flush(update: RunUpdate & { current?: string } = {}): Promise<void> {
    const next = this.flushing.then(() => this.flushNow(update));
    this.flushing = next.catch(() => undefined);
    return next;
  }

  private async flushNow(update: RunUpdate & { current?: string }): Promise<void> {
    if (!this.batch.length && !this.writes.length && !update.status && !update.current) return;
    const batch = this.batch;
    const writes = this.writes;
    this.batch = [];
    this.writes = [];
    try {
      await this.writeRetrying(update, writes, batch);
    } catch (e) {
      if (e instanceof LeaseLost) {
        this.exec.reason = 'lease';
        this.exec.abort.abort();
      }
      throw e;
    }
    if (batch.some((e) => e.type === 'run.started')) this.firstStart = false;
    for (const w of writes) {
      const s = this.state.get(w.nodeId);
      this.state.set(w.nodeId, { ...(s ?? ({} as RunNodeEntity)), runId: this.row.id, nodeId: w.nodeId, tenant: this.row.tenant, typeId: w.typeId, status: w.status, attempt: w.attempt, outputs: w.outputs ?? null, error: w.error ?? null, gateId: w.gateId ?? s?.gateId ?? null });
    }
  }

  /**
   * writeAll, retried with backoff (100 ms doubling to 2 s) while the database is unavailable, for
   * at most one lease: past it another replica may have claimed the run, and the fence decides. The
   * event ids are fixed before the first attempt, so an attempt whose answer was lost but which
   * committed is recognised by its first event instead of being written twice. Any other failure,
   * or the database still away at the end, is an EngineWriteError.
   */
  private async writeRetrying(u: RunUpdate & { current?: string }, writes: NodeWrite[], batch: BatchEvent[]): Promise<void> {
    const ids = batch.map(() => randomUUID());
    const until = Date.now() + this.d.settings.leaseMs;
    let delay = 100;
    let warned = false;
    for (;;) {
      try {
        return await this.writeAll(u, writes, batch, ids);
      } catch (e) {
        if (e instanceof LeaseLost) throw e;
        if (!isDatabaseUnavailable(e)) throw new EngineWriteError(e, false);
        if (Date.now() + delay > until || this.exec.reason === 'shutdown') throw new EngineWriteError(e, true);
        if (!warned) {
          warned = true;
          this.d.log.warn({ msg: 'run engine write failed: the database is unavailable; retrying', runId: this.row.id, err: (e as Error).message });
        }
        await new Promise((r) => setTimeout(r, delay));
        delay = Math.min(delay * 2, 2000);
        try {
          if (ids.length && (await this.d.ds.query(`SELECT 1 FROM "event" WHERE "id" = $1`, [ids[0]])).length) return this.written(u, batch);
        } catch {
          /* still away: the next attempt tells */
        }
      }
    }
  }

  /**
   * One round trip: a single statement whose first part is the fence (the run row, updated only while
   * this claim holds the lease); the node rows and the events are written only when the fence
   * matched, and a node row already `completed` aborts the whole statement (nothing is written).
   */
  private async writeAll(u: RunUpdate & { current?: string }, writes: NodeWrite[], batch: BatchEvent[], ids: string[]): Promise<void> {
    const params: unknown[] = [];
    const p = (v: unknown) => {
      params.push(v);
      return `$${params.length}`;
    };
    const runId = p(this.row.id);
    const where = `"id" = ${runId}::uuid AND "lease_owner" = ${p(this.d.owner)} AND "fence" = ${p(this.row.fence)}::int`;
    const sets = [`"node_executions" = ${p(this.nodeExecutions)}::int`, `"cost_usd" = ${p(this.costUsd)}::float8`, `"started_at" = COALESCE("started_at", now())`];
    if (u.terminal || u.release) sets.push(`"lease_expires_at" = NULL`, `"lease_owner" = NULL`);
    else sets.push(`"lease_expires_at" = now() + (${p(this.d.settings.leaseMs)}::int * interval '1 millisecond')`);
    if (u.status) sets.push(`"status" = ${p(u.status)}::text`);
    else sets.push(`"status" = CASE WHEN "cancel_requested" THEN 'cancelling' ELSE 'running' END`);
    if (u.paused) sets.push(`"metadata" = jsonb_set("metadata", '{pause,pausedAt}', to_jsonb(to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')))`);
    if (u.current !== undefined) sets.push(`"current_node_id" = ${p(u.current)}::text`);
    if (u.outputs) sets.push(`"outputs" = ${p(JSON.stringify(u.outputs))}::jsonb`);
    if (u.error) sets.push(`"error" = ${p(JSON.stringify(u.error))}::jsonb`);
    if (u.terminal) sets.push(`"completed_at" = now()`);
    if (u.terminal && u.current === undefined) sets.push(`"current_node_id" = NULL`);
    const ctes = [`f AS (UPDATE "run" SET ${sets.join(', ')} WHERE ${where} RETURNING "cancel_requested", "metadata"->'pause' AS "pause", "followed_until" > now() AS "followed")`];
    const tenant = p(this.row.tenant);
    const byNode = new Map<string, NodeWrite>();
    for (const w of writes) byNode.set(w.nodeId, w);
    if (byNode.size) {
      const rows = [...byNode.values()].map(
        (w) =>
          `(${p(w.nodeId)}::text, ${p(w.typeId)}::text, ${p(w.status)}::text, ${p(w.attempt)}::int, ${p(w.outputs === undefined || w.outputs === null ? null : JSON.stringify(w.outputs))}::jsonb, ${p(w.error ? JSON.stringify(w.error) : null)}::jsonb, ${p(w.gateId ?? null)}::uuid)`,
      );
      ctes.push(`n AS (INSERT INTO "run_node" ("run_id", "node_id", "tenant", "type_id", "status", "attempt", "outputs", "error", "gate_id", "updated_at")
        SELECT ${runId}::uuid, v.node_id, ${tenant}::text, v.type_id, v.status, v.attempt, v.outputs, v.error, v.gate_id, now()
        FROM (VALUES ${rows.join(', ')}) AS v(node_id, type_id, status, attempt, outputs, error, gate_id) WHERE EXISTS (SELECT 1 FROM f)
        ON CONFLICT ("run_id", "node_id") DO UPDATE SET "status" = EXCLUDED."status", "attempt" = EXCLUDED."attempt", "outputs" = EXCLUDED."outputs",
          "error" = EXCLUDED."error", "gate_id" = COALESCE(EXCLUDED."gate_id", "run_node"."gate_id"), "updated_at" = now()
        WHERE "run_node"."status" <> 'completed' RETURNING 1)`);
    }
    if (batch.length) {
      const k = p(batch.length);
      const stream = p(this.row.id);
      ctes.push(`s AS (INSERT INTO "event_stream" ("tenant", "stream_id", "last_sequence") SELECT ${tenant}::text, ${stream}::text, ${k}::bigint WHERE EXISTS (SELECT 1 FROM f)
        ON CONFLICT ("tenant", "stream_id") DO UPDATE SET "last_sequence" = "event_stream"."last_sequence" + ${k}::bigint RETURNING "last_sequence")`);
      const rows = batch.map((e, i) => {
        const cause = e.causationIndex !== undefined ? ids[e.causationIndex] : (e.causationId ?? null);
        return `(${p(ids[i])}::uuid, ${i}, ${p(e.type)}::text, ${p(JSON.stringify(e.payload))}::jsonb, ${p(e.correlationId ?? null)}::text, ${p(cause)}::text, ${p(e.nodeId ?? null)}::text)`;
      });
      ctes.push(`e AS (INSERT INTO "event" ("id", "tenant", "workspace", "stream_id", "sequence", "type", "payload", "correlation_id", "causation_id", "node_id")
        SELECT v.id, ${tenant}::text, ${p(this.row.workspace)}::text, ${stream}::text, s."last_sequence" - ${k}::bigint + 1 + v.i, v.type, v.payload, v.corr, v.cause, v.node
        FROM s, (VALUES ${rows.join(', ')}) AS v(id, i, type, payload, corr, cause, node) RETURNING 1)`);
    }
    // A follower on another replica (run.followed_until) is notified by this very statement; nobody else is.
    let notify = '';
    if (batch.length) {
      ctes.push(`nt AS (SELECT pg_notify('${EVENTS_CHANNEL}', ${runId}::text) FROM f WHERE f."followed")`);
      notify = `, (SELECT count(*) FROM nt) AS "notified"`;
    }
    // A node row that was already completed leaves `n` short: divide by zero to abort the statement.
    const guard = byNode.size ? `, 1 / (CASE WHEN NOT EXISTS (SELECT 1 FROM f) OR (SELECT count(*) FROM n) = ${p(byNode.size)}::bigint THEN 1 ELSE 0 END) AS "guard"` : '';
    let rows: Array<{ fenced: number; cancel: boolean | null; pause: PauseRequest | null }>;
    try {
      rows = (await this.d.ds.query(`WITH ${ctes.join(',\n')} SELECT (SELECT count(*)::int FROM f) AS "fenced", (SELECT "cancel_requested" FROM f) AS "cancel", (SELECT "pause" FROM f) AS "pause"${notify}${guard}`, params)) as typeof rows;
    } catch (e) {
      if (/division by zero/.test((e as Error).message)) throw new Error('a node of this run was already completed');
      throw e;
    }
    if (!rows[0]?.fenced) throw new LeaseLost('the run lease was lost');
    this.written(u, batch);
    if (rows[0].cancel && !u.terminal) this.requestStop('cancel');
    else if (rows[0].pause && !rows[0].pause.pausedAt && !u.terminal && !u.paused) this.requestPause(rows[0].pause);
  }

  /** After a committed write: count a finished run and wake the event readers. */
  private written(u: RunUpdate, batch: BatchEvent[]): void {
    if (u.status) this.trace.status(u.status, u.error);
    if (u.terminal && (u.status === 'completed' || u.status === 'failed' || u.status === 'cancelled')) this.d.metrics.runFinished(u.status);
    if (batch.length) this.d.events.wake();
  }

  /** The fence: the run row is updated only while this claim still holds the lease. */
  private async fence(m: EntityManager, u: RunUpdate, current?: string): Promise<void> {
    const params: unknown[] = [this.row.id, this.d.owner, this.row.fence, this.nodeExecutions, this.costUsd];
    const sets = [`"node_executions" = $4`, `"cost_usd" = $5`, `"started_at" = COALESCE("started_at", now())`];
    const add = (sql: string, v: unknown) => {
      params.push(v);
      sets.push(sql.replace('?', `$${params.length}`));
    };
    if (u.terminal || u.release) sets.push(`"lease_expires_at" = NULL`);
    else add(`"lease_expires_at" = now() + (?::int * interval '1 millisecond')`, this.d.settings.leaseMs);
    if (u.status) add(`"status" = ?`, u.status);
    if (current !== undefined) add(`"current_node_id" = ?`, current);
    if (u.outputs) add(`"outputs" = ?::jsonb`, JSON.stringify(u.outputs));
    if (u.error) add(`"error" = ?::jsonb`, JSON.stringify(u.error));
    if (u.terminal) sets.push(`"completed_at" = now()`);
    if (u.terminal && current === undefined) sets.push(`"current_node_id" = NULL`);
    if (u.terminal || u.release) sets.push(`"lease_owner" = NULL`);
    // A run whose cancellation was requested stays `cancelling` until it is finished.
    const status = u.status ? '' : `, "status" = CASE WHEN "cancel_requested" THEN 'cancelling' ELSE 'running' END`;
    const res = await m.query(
      `UPDATE "run" SET ${sets.join(', ')}${status} WHERE "id" = $1 AND "lease_owner" = $2 AND "fence" = $3 RETURNING "cancel_requested"`,
      params,
    );
    const rows = rowsOf<{ cancel_requested: boolean }>(res);
    if (!rows.length) throw new LeaseLost('the run lease was lost');
    if (rows[0].cancel_requested && !u.terminal) this.requestStop('cancel');
  }

  private async writeNodes(m: EntityManager, writes: NodeWrite[]): Promise<void> {
    // Last write per node wins within one flush (e.g. running then completed).
    const byNode = new Map<string, NodeWrite>();
    for (const w of writes) byNode.set(w.nodeId, w);
    const params: unknown[] = [];
    const tuples = [...byNode.values()].map((w, i) => {
      params.push(this.row.id, w.nodeId, this.row.tenant, w.typeId, w.status, w.attempt, w.outputs === undefined || w.outputs === null ? null : JSON.stringify(w.outputs), w.error ? JSON.stringify(w.error) : null, w.gateId ?? null);
      const b = i * 9;
      return `($${b + 1}::uuid, $${b + 2}, $${b + 3}, $${b + 4}, $${b + 5}, $${b + 6}::int, $${b + 7}::jsonb, $${b + 8}::jsonb, $${b + 9}::uuid, now())`;
    });
    const res = await m.query(
      `INSERT INTO "run_node" ("run_id", "node_id", "tenant", "type_id", "status", "attempt", "outputs", "error", "gate_id", "updated_at") VALUES ${tuples.join(', ')}
       ON CONFLICT ("run_id", "node_id") DO UPDATE SET "status" = EXCLUDED."status", "attempt" = EXCLUDED."attempt", "outputs" = EXCLUDED."outputs",
         "error" = EXCLUDED."error", "gate_id" = COALESCE(EXCLUDED."gate_id", "run_node"."gate_id"), "updated_at" = now()
       WHERE "run_node"."status" <> 'completed'
       RETURNING "node_id"`,
      params,
    );
    if (rowsOf(res).length !== byNode.size) {
      // Unreachable while the fence holds; refuse rather than complete a node twice.
      throw new Error('a node of this run was already completed');
    }
  }

  private requestStop(reason: StopReason): void {
    if (this.exec.reason) return;
    this.exec.reason = reason;
    this.exec.abort.abort();
  }

  private async renew(): Promise<void> {
    try {
      const res = await this.d.ds.query(
        `UPDATE "run" SET "lease_expires_at" = now() + ($4::int * interval '1 millisecond') WHERE "id" = $1 AND "lease_owner" = $2 AND "fence" = $3 RETURNING "cancel_requested", "metadata"->'pause' AS "pause"`,
        [this.row.id, this.d.owner, this.row.fence, this.d.settings.leaseMs],
      );
      const rows = rowsOf<{ cancel_requested: boolean; pause: PauseRequest | null }>(res);
      if (!rows.length) this.requestStop('lease');
      else if (rows[0].cancel_requested) this.requestStop('cancel');
      else if (rows[0].pause && !rows[0].pause.pausedAt) this.requestPause(rows[0].pause);
    } catch (e) {
      this.d.log.warn({ msg: 'run lease renewal failed', runId: this.row.id, err: (e as Error).message });
    }
  }

  /** RFC 0058 run-duration: breached only once the elapsed time is strictly greater than the limit. */
  private armDeadline(): void {
    const limit = this.bounds.runTimeoutMs;
    const check = () => {
      const elapsed = Date.now() - this.startedAtMs;
      if (elapsed <= limit) {
        this.deadline = setTimeout(check, limit - elapsed + 1);
        return;
      }
      if (!this.breach && !this.exec.reason) {
        this.breach = { kind: 'run-duration', limit, observed: elapsed, code: 'run_timeout', message: `The run exceeded its ${limit} ms duration bound.` };
        this.stopNodes();
      }
    };
    check();
  }
}
