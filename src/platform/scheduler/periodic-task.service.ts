import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { DataSource } from 'typeorm';
import { HOST_CONFIG, HostConfig } from '../config/host-config';
import { LeaseKeeper, LeaseStore } from '../leases/lease-keeper';
import { leaseOwnerId } from '../leases/lease-owner';
import { sqlLeaseStore } from '../leases/sql-lease-store';
import { WiringFault } from '../errors/internal-fault';
import { LocalTask, LocalTaskHandle, LocalTaskLoop } from './local-task';

export interface PeriodicTask {
  /** Unique, stable name (the lease row's key). */
  name: string;
  intervalMs: number;
  /**
   * How long a claim on a slot lasts without renewal (default: twice the interval, at least a
   * minute): how soon another replica takes over the slot of a replica that died. While the task runs
   * its lease is renewed every third of that; when a renewal finds the lease taken, or renewals keep
   * failing until it would have run out, the task's signal is aborted.
   */
  leaseMs?: number;
  /**
   * One slot's work. `signal` aborts on shutdown and when the slot's lease is lost: stop then, as
   * another replica may already be running the slot; a run that ends after losing its lease is not
   * recorded (the slot stays due). It may answer `nextInMs` to have its next slot sooner than the
   * interval (work left over that a later slot should pick up soon: a retention backlog).
   */
  run(signal: AbortSignal): Promise<void | { nextInMs?: number }>;
}

/**
 * The host's periodic work, all of it: `register` a PeriodicTask for work run once per slot across
 * any number of replicas, `every` a LocalTask for a loop every replica runs on its own (claim
 * tickers and outbox polls). No other file keeps a timer of periodic work (a scan checks
 * setInterval). Host-wide periodic work, run once per slot across any number of replicas. The local ticker is an
 * @nestjs/schedule interval (OPENWOP_SCHEDULER_TICK_MS); the claim is a conditional UPDATE on the
 * database clock, so clock skew between replicas does not matter, and a crashed replica's lease
 * simply expires. A running task's lease is kept by a LeaseKeeper, so a long task keeps its slot and a
 * task that loses it stops instead of running beside its successor.
 */
@Injectable()
export class PeriodicTaskService implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('scheduler');
  private readonly tasks = new Map<string, PeriodicTask>();
  /** One keeper per task, as each task has its own lease length. */
  private readonly keepers = new Map<string, LeaseKeeper<string>>();
  private readonly store: LeaseStore<string>;
  private readonly owner: string;
  private ticking?: Promise<void>;
  private readonly abort = new AbortController();
  private readonly loops = new Map<string, LocalTaskHandle>();
  /** When each task's row was last written or claimed by this replica (runIfDue). */
  private readonly asserted = new Map<string, number>();

  constructor(
    private readonly ds: DataSource,
    private readonly registry: SchedulerRegistry,
    @Inject(HOST_CONFIG) private readonly config: HostConfig,
  ) {
    this.owner = leaseOwnerId(config.instanceId);
    this.store = sqlLeaseStore(ds, { table: 'scheduled_task', keyColumn: 'name' });
  }

  register(task: PeriodicTask): void {
    if (this.tasks.has(task.name)) throw new WiringFault(`periodic task "${task.name}" registered twice`);
    this.tasks.set(task.name, task);
    this.keepers.set(task.name, new LeaseKeeper({ owner: this.owner, leaseMs: leaseMsOf(task), store: this.store, log: this.logger }));
  }

  /**
   * Starts a loop this replica runs on its own (see LocalTask), now: its owner starts it when it is
   * ready and stops it (the handle) before what it uses closes; the scheduler stops what is left at shutdown.
   */
  every(task: LocalTask): LocalTaskHandle {
    if (this.loops.has(task.name)) throw new WiringFault(`local task "${task.name}" started twice`);
    const loop = new LocalTaskLoop(task, (err) => this.logger.error({ msg: 'local task pass failed', task: task.name, err }));
    const interval = loop.start();
    if (interval) this.registry.addInterval(task.name, interval);
    const handle: LocalTaskHandle = {
      wake: () => loop.wake(),
      stop: async () => {
        if (this.loops.get(task.name) === handle) {
          this.loops.delete(task.name);
          // The schedule module may have cleared its registry already (its own shutdown).
          if (interval && this.registry.getIntervals().includes(task.name)) this.registry.deleteInterval(task.name);
        }
        await loop.stop();
      },
    };
    this.loops.set(task.name, handle);
    return handle;
  }

  onApplicationBootstrap(): void {
    if (!this.config.schedulerEnabled) return;
    const timer = setInterval(() => void this.tick(), this.config.schedulerTickMs);
    timer.unref();
    this.registry.addInterval('openwop-host.scheduler', timer);
  }

  async onApplicationShutdown(): Promise<void> {
    this.abort.abort();
    await Promise.all([...this.loops.values()].map((l) => l.stop()));
    try {
      this.registry.deleteInterval('openwop-host.scheduler');
    } catch {
      /* not started */
    }
    // Aborts the running task and hands its slot back at once, rather than after its lease.
    await Promise.all([...this.keepers.values()].map((k) => k.stop()));
    await this.ticking;
  }

  /** Runs every due task once (each claimed in the database). Overlapping ticks are skipped. */
  async tick(): Promise<void> {
    if (this.ticking) return this.ticking;
    this.ticking = this.runDue().finally(() => (this.ticking = undefined));
    return this.ticking;
  }

  /** Makes a task due now (tests and admin actions). */
  async trigger(name: string): Promise<void> {
    await this.ds.query(`UPDATE "scheduled_task" SET "next_run_at" = now() WHERE "name" = $1`, [name]);
  }

  /**
   * One read finds the slots that are due and free (an idle tick sends only it); each of those is then
   * claimed by its own conditional UPDATE, which stays the claim's authority (another replica may claim
   * it in between), and run. A slot that falls due while an earlier task of the tick runs waits for the
   * next tick.
   */
  private async runDue(): Promise<void> {
    const tasks = [...this.tasks.values()];
    for (const task of tasks) {
      if (this.abort.signal.aborted) return;
      try {
        await this.assertRow(task);
      } catch (e) {
        this.logger.error({ msg: 'scheduler tick failed', task: task.name, err: e });
      }
    }
    if (!tasks.length || this.abort.signal.aborted) return;
    let due: Set<string>;
    try {
      const rows = (await this.ds.query(
        `SELECT "name" FROM "scheduled_task"
         WHERE "name" = ANY($1::text[]) AND "next_run_at" <= now() AND ("lease_expires_at" IS NULL OR "lease_expires_at" < now())`,
        [tasks.map((t) => t.name)],
      )) as Array<{ name: string }>;
      due = new Set(rows.map((r) => r.name));
    } catch (e) {
      this.logger.error({ msg: 'scheduler tick failed', err: e });
      return;
    }
    for (const task of tasks) {
      if (this.abort.signal.aborted) return;
      if (!due.has(task.name)) continue;
      try {
        await this.runIfDue(task);
      } catch (e) {
        this.logger.error({ msg: 'scheduler tick failed', task: task.name, err: e });
      }
    }
  }

  /**
   * The task's row (due at once when new; its interval as this replica runs it) is written at its
   * first tick here, and again only when the slot went unclaimed here for longer than an interval and
   * a lease (another replica runs it, or the row is gone): an idle tick writes nothing.
   */
  private async assertRow(task: PeriodicTask): Promise<void> {
    const assertedAt = this.asserted.get(task.name);
    if (assertedAt !== undefined && Date.now() - assertedAt <= task.intervalMs + leaseMsOf(task)) return;
    await this.ds.query(
      `INSERT INTO "scheduled_task" ("name", "interval_ms", "next_run_at") VALUES ($1, $2, now())
       ON CONFLICT ("name") DO UPDATE SET "interval_ms" = EXCLUDED."interval_ms"`,
      [task.name, task.intervalMs],
    );
    this.asserted.set(task.name, Date.now());
  }

  private async runIfDue(task: PeriodicTask): Promise<void> {
    const claimedAtMs = Date.now();
    const claimed = (await this.ds.query(
      `UPDATE "scheduled_task" SET "lease_owner" = $1, "lease_expires_at" = now() + ($2::int * interval '1 millisecond')
       WHERE "name" = $3 AND "next_run_at" <= now() AND ("lease_expires_at" IS NULL OR "lease_expires_at" < now())
       RETURNING "name"`,
      [this.owner, leaseMsOf(task), task.name],
    )) as [Array<{ name: string }>, number];
    if (!claimed[0]?.length) return;
    this.asserted.set(task.name, claimedAtMs);
    const lease = this.keepers.get(task.name)!.hold(task.name, { claimedAtMs });
    if (lease.signal.aborted) {
      // Claimed while the host was stopping (the keeper keeps nothing any more): hand the slot back here.
      await this.store.release!(this.owner, [task.name]).catch(() => undefined);
      return;
    }
    let error: string | null = null;
    let nextInMs: number | null = null;
    try {
      const outcome = await task.run(lease.signal);
      if (outcome?.nextInMs !== undefined) nextInMs = Math.max(0, Math.min(Math.round(outcome.nextInMs), task.intervalMs));
    } catch (e) {
      error = (e as Error).message ?? String(e);
      if (!lease.reason) this.logger.error({ msg: 'periodic task failed', task: task.name, err: e });
    }
    const ended = lease.reason;
    await lease.drop();
    if (ended) {
      // Lost, expired or stopped mid-run: another replica may hold the slot, and this run may be cut short.
      if (ended !== 'shutdown') this.logger.warn({ msg: 'periodic task lost its lease; its run is not recorded', task: task.name, reason: ended });
      return;
    }
    // The next slot follows the previous slot, but a backlog collapses into one catch-up run; a task
    // that asked for its next slot sooner gets it that long from now.
    await this.ds.query(
      `UPDATE "scheduled_task" SET "lease_owner" = NULL, "lease_expires_at" = NULL, "last_run_at" = now(), "last_error" = $3,
         "next_run_at" = CASE WHEN $5::int IS NULL THEN GREATEST("next_run_at" + ($2::int * interval '1 millisecond'), now())
                              ELSE now() + ($5::int * interval '1 millisecond') END
       WHERE "name" = $1 AND "lease_owner" = $4`,
      [task.name, task.intervalMs, error, this.owner, nextInMs],
    );
  }
}

function leaseMsOf(task: PeriodicTask): number {
  return task.leaseMs ?? Math.max(60_000, task.intervalMs * 2);
}
