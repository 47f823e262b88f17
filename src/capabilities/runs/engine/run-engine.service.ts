import { BeforeApplicationShutdown, Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { DatabaseNotifications, RUNS_CHANNEL } from '../../../platform/database/database-notifications';
import { EventLogService } from '../../../platform/events/event-log.service';
import { HealthService } from '../../../platform/health/health.service';
import { ActivityLedger } from '../../../platform/idempotency/activity-ledger.service';
import { RunArtifactsService } from '../artifacts/run-artifacts.service';
import { NodeMcpBinder } from './node-mcp';
import { WorkspaceSnapshots } from '../../workspace';
import { ApprovalsService } from '../../approvals';
import { NodeExecutorRegistry } from './node-executor-registry.service';
import { RunExecution } from './run-execution';
import { Execution, ExecutionDeps, RunLeaseInfo, StopReason } from './run-execution.types';
import type { CompensationHook } from '../compensation/compensation.service';
import { LeaseKeeper } from '../../../platform/leases/lease-keeper';
import { leaseOwnerId } from '../../../platform/leases/lease-owner';
import { RUN_GATE_SUBJECT } from './run-gates';
import { EagerInsertOutcome, EagerStart } from './run-eager-start';
import { ClaimedRow, FlushParams, lockRun, releaseLease, releaseLeaseAndNotify, PauseRequest, reopenRun, runLeaseStore, runStoreOn } from './run-store';
import { RunClaimer, SlotReservation } from './run-claimer';
import { namedRun } from './run-newcomer-claim';
import type { LocalTaskHandle } from '../../../platform/scheduler/local-task';
import { PeriodicTaskService } from '../../../platform/scheduler/periodic-task.service';
import { LeaseLost } from './run-writer';
import { RunMetrics } from '../runs.metrics';
import { RUNS_SETTINGS, RunsSettings } from '../runs.settings';

/** How long a stopping engine waits for its executions to stop before it hands their leases back all the same. */
const SHUTDOWN_WAIT_MS = 5000;

// The engine's vocabulary, where the rest of the capability has always found it.
export type { RunBounds } from './run-bounds';
export { RUN_GATE_SUBJECT } from './run-gates';
export { CLAIM_RUNS_SQL, WAITING_STATUS, WAITING_STATUSES } from './run-store';
export type { ClaimedRow, PauseRequest } from './run-store';

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
export class RunEngineService implements OnApplicationBootstrap, BeforeApplicationShutdown, OnApplicationShutdown {
  private readonly log = new Logger('runs.engine');
  readonly owner: string;
  private readonly executions = new Map<string, Execution>();
  /** How many runs of each tenant execute here. */
  private readonly tenants = new Map<string, number>();
  private readonly ended: Array<(row: ClaimedRow) => void> = [];
  /** The leases of the runs executing here: renewed together (one statement per interval), each execution stopped when its own is lost. */
  private readonly leases: LeaseKeeper<string, RunLeaseInfo>;
  /** Finds work: slots, claim passes, claims folded into writes, runs claimed at once. */
  private readonly claimer: RunClaimer;
  private ticker?: LocalTaskHandle;
  private stopped = false;
  /** The shutdown, once: every caller waits for the same handback. */
  private stopping?: Promise<void>;
  /** Leases of runs claimed while stopping, being handed back (the shutdown waits for them). */
  private readonly handingBack = new Set<Promise<void>>();
  private readonly deps: ExecutionDeps;

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
    private readonly artifacts: RunArtifactsService,
    private readonly nodeMcp: NodeMcpBinder,
    private readonly scheduler: PeriodicTaskService,
    private readonly workspace: WorkspaceSnapshots,
  ) {
    this.owner = leaseOwnerId(settings.instanceId);
    this.leases = new LeaseKeeper<string, RunLeaseInfo>({
      owner: this.owner,
      leaseMs: settings.leaseMs,
      log: this.log,
      // Each claim renewed with its fence; at shutdown the unfinished runs are handed back (the other replicas woken).
      store: runLeaseStore(ds, (runId) => {
        const e = this.executions.get(runId);
        // A run not inserted yet holds no lease row: its insert writes the lease.
        return e?.eager && !e.eager.written ? null : e?.fence;
      }),
    });
    this.claimer = new RunClaimer({
      ds,
      owner: this.owner,
      settings,
      active: () => this.activeCount(),
      stopped: () => this.stopped,
      has: (runId) => this.executions.has(runId),
      executes: (tenant) => this.tenants.has(tenant),
      start: (row, sentAt) => this.start(row, sentAt),
      handBack: (row) => this.handBackLate(row),
      health: (ok) => this.health.report('runs.engine', ok, ok ? undefined : 'a run claim pass failed'),
      log: this.log,
    });
    // What the executions of this replica use (their statements bound to its data source). Their
    // writes claim for the slots they free (one round trip for both).
    this.deps = {
      store: runStoreOn(this.ds, { maxInFlight: 2, maxBatch: 64, claims: this.claimer }),
      events: this.events,
      executors: this.executors,
      approvals: this.approvals,
      settings: this.settings,
      owner: this.owner,
      log: this.log,
      metrics: this.metrics,
      ledger: this.ledger,
      artifacts: this.artifacts,
      nodeMcp: this.nodeMcp,
      workspace: this.workspace,
      releaseWhenPossible: (runId, fence) => this.releaseWhenPossible(runId, fence),
      finished: (runId) => this.finished(runId),
    };
    // The followers of a run executed here are woken by its writes in process (EventLogService.wake).
    events.localStream = (runId) => this.executions.has(runId);
  }

  /** RFC 0151: what mints a failed or cancelled run's compensation plan (compensation.service.ts). */
  useCompensation(hook: CompensationHook): void {
    this.deps.compensation = hook;
  }

  onApplicationBootstrap(): void {
    this.approvals.registerSubject(RUN_GATE_SUBJECT, {
      // Inside the deciding transaction: make the run claimable again; the node reads the gate's state.
      release: (m, gate) => this.reopen(m, gate.subjectId),
      closed: (m, gate) => this.reopen(m, gate.subjectId),
      // The run row before the gate, as a cancel locks them: a resolve racing a cancel waits for it.
      lock: (m, gate) => lockRun(m, { runId: gate.subjectId }),
    });
    if (!this.settings.executing) return;
    // Every tick asks the claimer, which folds a tick into the pass in flight (one more pass after it).
    this.ticker = this.scheduler.every({ name: 'runs.claim', intervalMs: this.settings.claimIntervalMs, run: async () => void this.claimer.tick() });
    // Another replica's unclaimed run (or handed-back lease) wakes this one at once; the ticker
    // remains the bound when notifications are missed or not delivered (the embedded engine).
    this.notifications.subscribe(RUNS_CHANNEL, (payload) => this.claimer.noteClaimable(namedRun(payload)));
    // Resume what a previous process left (its leases may still have to expire).
    setImmediate(() => void this.claimAvailable());
  }

  /**
   * The first shutdown hook of the application's close: before the HTTP server closes (an open event
   * stream can hold it for as long as the process is given to stop) and before the database does.
   */
  beforeApplicationShutdown(): Promise<void> {
    return this.shutdown();
  }

  onApplicationShutdown(): Promise<void> {
    return this.shutdown();
  }

  /**
   * Stops claiming, stops the executions and hands their leases back (`lease_owner` cleared), so
   * the next process or another replica resumes the runs at once instead of after their lease. Runs
   * once; a second caller (the application closed twice, a signal during a close) waits for the same
   * handback instead of going on to close the database under it.
   */
  shutdown(): Promise<void> {
    return (this.stopping ??= this.handBack());
  }

  private async handBack(): Promise<void> {
    this.stopped = true;
    void this.ticker?.stop();
    await this.claimer.settled();
    const running = [...this.executions.values()];
    for (const e of running) this.stop(e, 'shutdown');
    // An execution stops at its next await; one that does not within the bound loses its lease all
    // the same (its later writes are refused: they are fenced on the lease).
    let bound: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.all(running.map((e) => e.done.catch(() => undefined))),
      new Promise<void>((r) => (bound = setTimeout(r, SHUTDOWN_WAIT_MS))),
    ]);
    clearTimeout(bound);
    await this.leases.stop();
    while (this.handingBack.size) await Promise.all([...this.handingBack]);
  }

  /** Hands back the lease of a run claimed while stopping (best effort: it expires anyway); the shutdown waits for it. */
  private handBackLate(row: Pick<ClaimedRow, 'id' | 'fence'>): void {
    const p: Promise<void> = releaseLease(this.ds, { runId: row.id, owner: this.owner, fence: row.fence })
      .catch(() => undefined)
      .finally(() => this.handingBack.delete(p));
    this.handingBack.add(p);
  }

  /** How many runs this replica is executing. */
  activeCount(): number {
    return this.executions.size;
  }

  /**
   * Promises a slot to a run of `tenant` about to be created here, which its own insert then claims
   * (lease, fence 1) so it starts without a claim statement of its own: a slot of the capacity when
   * this replica has room, else (fair claims) maybe one of the newcomers' reserve (RunClaimer.reserve).
   * The caller hands the inserted row to `adopt` (or starts it with `startEager`), or calls
   * `unreserve` when its insert did not claim it.
   */
  reserve(tenant?: string, newcomer = true): SlotReservation | undefined {
    return this.claimer.reserve(tenant, newcomer);
  }

  unreserve(r?: SlotReservation): void {
    this.claimer.unreserve(r);
  }

  /** Starts a run its insert claimed for this replica (after `reserve`); `claimedAtMs`: when the insert was sent. */
  adopt(row: ClaimedRow, claimedAtMs = Date.now(), r: SlotReservation = { newcomer: false }): void {
    if (this.stopped) {
      this.unreserve(r);
      // Stopping: hand the lease back, as the shutdown does for the others.
      this.handBackLate(row);
      return;
    }
    // Its stream is empty and this engine its only writer: followers opening it are answered from what it writes.
    this.events.openLocalStream({ tenant: row.tenant, workspace: row.workspace }, row.id);
    this.claimer.admit(r, row.id, () => this.start(row, claimedAtMs));
  }

  /**
   * Starts a run before its insert (after `reserve`): the run's first write is its insert (`insert`:
   * the row, its node rows and its events in one statement), sent as soon as the execution writes,
   * or after one turn of the event loop with what it has by then (a node waiting on a timer or on
   * I/O). A run whose nodes complete at once is thus inserted already finished, in one round trip.
   * Only for runs whose every node is `deterministic` (nothing they do reaches the database or the
   * outside before the insert). Answers the start, whose `inserted` settles with the insert's
   * answer; undefined when the replica is stopping (the caller inserts the run the usual way).
   */
  startEager(row: ClaimedRow, insert: (f: FlushParams) => Promise<EagerInsertOutcome>, r: SlotReservation = { newcomer: false }): EagerStart | undefined {
    if (this.stopped) {
      this.unreserve(r);
      return undefined;
    }
    const eager = new EagerStart(this.deps.store, insert);
    this.events.openLocalStream({ tenant: row.tenant, workspace: row.workspace }, row.id);
    this.claimer.admit(r, row.id, () => this.start(row, Date.now(), eager));
    setImmediate(() => {
      if (!eager.sent) this.executions.get(row.id)?.writeNow?.();
    });
    return eager;
  }

  /** Claimable runs may be waiting (announced, or created here without a free slot; `named`: that run): claim now, and when a slot frees. */
  noteClaimable(named?: { runId: string; tenant: string }): void {
    this.claimer.noteClaimable(named);
  }

  /** Claims and starts one run right away (it was created or released here). Retries briefly: the caller's transaction may still be committing. */
  kick(runId: string, attempts = 5): void {
    this.claimer.kick(runId, attempts);
  }

  /** Claims runs nobody holds (new, released, or of a dead replica) while there is capacity. */
  claimAvailable(): Promise<void> {
    return this.claimer.claimAvailable();
  }

  /** Signals a local execution of the run to stop for cancellation (another replica's sees it at its next lease renewal). */
  cancelLocal(runId: string): boolean {
    const e = this.executions.get(runId);
    if (!e) return false;
    this.stop(e, 'cancel');
    return true;
  }

  /** Asks a local execution of the run to pause (another replica's sees it at its next lease renewal or write). */
  pauseLocal(runId: string, request: PauseRequest): boolean {
    const e = this.executions.get(runId);
    if (!e?.pause) return false;
    e.pause(request);
    return true;
  }

  private stop(e: Execution, reason: StopReason): void {
    if (e.reason) return;
    e.reason = reason;
    e.abort.abort();
  }

  private start(row: ClaimedRow, claimedAtMs: number, eager?: EagerStart): void {
    if (this.executions.has(row.id)) return;
    // Claimed by a claim that was out when the shutdown began (a kick, a claim folded into a write): handed back, not run.
    if (this.stopped && !eager) return this.handBackLate(row);
    const exec: Execution = { runId: row.id, fence: row.fence, abort: new AbortController(), done: Promise.resolve(), eager };
    this.executions.set(row.id, exec);
    this.tenants.set(row.tenant, (this.tenants.get(row.tenant) ?? 0) + 1);
    exec.lease = this.leases.hold(row.id, { claimedAtMs, onRenewed: (info) => exec.renewed?.(info) });
    exec.done = new RunExecution(eager ? { ...this.deps, store: eager } : this.deps, row, exec)
      .run()
      // Whoever follows executions (the interrupt callbacks) hears that this one ended.
      .then(() => this.ended.forEach((l) => l(row)))
      .catch((e: unknown) => {
        // A claim that lost its lease stops quietly: the run goes on under the claim that took it.
        if (!(e instanceof LeaseLost) && exec.reason !== 'lease') this.log.error({ msg: 'run execution failed', runId: row.id, err: (e as Error).message, stack: (e as Error).stack });
      })
      .finally(() => {
        // Ended without writing (stopping): never inserted, the creation inserts it the usual way.
        eager?.ended();
        this.executions.delete(row.id);
        const n = (this.tenants.get(row.tenant) ?? 1) - 1;
        if (n > 0) this.tenants.set(row.tenant, n);
        else this.tenants.delete(row.tenant);
        // Not closed with a final status: the stream may be written elsewhere from now on.
        this.events.closeLocalStream(row.id);
        this.claimer.freed(row.id);
      });
  }

  private async reopen(m: EntityManager, runId: string): Promise<void> {
    await reopenRun(m, { runId });
    // Claimed here after the deciding transaction commits (other replicas find it at their next pass).
    setTimeout(() => this.kick(runId, 10), 10);
  }

  /**
   * Hands back the lease of a run this replica stopped executing because the database was away, as
   * soon as the database answers (within one lease; after it the lease has expired anyway), so a
   * claim pass resumes the run at once instead of after the lease.
   */
  private releaseWhenPossible(runId: string, fence: number): void {
    const until = Date.now() + this.settings.leaseMs;
    const attempt = async () => {
      if (this.stopped || Date.now() > until) return;
      try {
        await releaseLeaseAndNotify(this.ds, { runId, owner: this.owner, fence });
        this.noteClaimable();
      } catch {
        setTimeout(() => void attempt(), 1000).unref();
      }
    };
    setTimeout(() => void attempt(), 1000).unref();
  }

  private readonly runWaiters = new Map<string, Set<() => void>>();

  /** Listens to every execution of this replica that ended without a fault (the run row it was claimed with). */
  onExecutionEnded(listener: (row: ClaimedRow) => void): void {
    this.ended.push(listener);
  }

  private finished(runId: string): void {
    this.runWaiters.get(runId)?.forEach((w) => w());
    this.runWaiters.delete(runId);
  }

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
