import { randomUUID } from 'node:crypto';
import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { DataSource } from 'typeorm';
import { HOST_CONFIG, HostConfig } from '../config/host-config';

export interface PeriodicTask {
  /** Unique, stable name (the lease row's key). */
  name: string;
  intervalMs: number;
  /** How long one run may hold the lease before another replica may take over. */
  leaseMs?: number;
  run(signal: AbortSignal): Promise<void>;
}

/**
 * Host-wide periodic work, run once per slot across any number of replicas. The local ticker is an
 * @nestjs/schedule interval (OPENWOP_SCHEDULER_TICK_MS); the claim is a conditional UPDATE on the
 * database clock, so clock skew between replicas does not matter, and a crashed replica's lease
 * simply expires.
 */
@Injectable()
export class PeriodicTaskService implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('scheduler');
  private readonly tasks = new Map<string, PeriodicTask>();
  private readonly owner: string;
  private ticking?: Promise<void>;
  private readonly abort = new AbortController();

  constructor(
    private readonly ds: DataSource,
    private readonly registry: SchedulerRegistry,
    @Inject(HOST_CONFIG) private readonly config: HostConfig,
  ) {
    this.owner = `${config.instanceId}:${randomUUID().slice(0, 8)}`;
  }

  register(task: PeriodicTask): void {
    if (this.tasks.has(task.name)) throw new Error(`periodic task "${task.name}" registered twice`);
    this.tasks.set(task.name, task);
  }

  onApplicationBootstrap(): void {
    if (!this.config.schedulerEnabled) return;
    const timer = setInterval(() => void this.tick(), this.config.schedulerTickMs);
    timer.unref();
    this.registry.addInterval('openwop-host.scheduler', timer);
  }

  async onApplicationShutdown(): Promise<void> {
    this.abort.abort();
    try {
      this.registry.deleteInterval('openwop-host.scheduler');
    } catch {
      /* not started */
    }
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

  private async runDue(): Promise<void> {
    for (const task of this.tasks.values()) {
      if (this.abort.signal.aborted) return;
      try {
        await this.ds.query(
          `INSERT INTO "scheduled_task" ("name", "interval_ms", "next_run_at") VALUES ($1, $2, now())
           ON CONFLICT ("name") DO UPDATE SET "interval_ms" = EXCLUDED."interval_ms"`,
          [task.name, task.intervalMs],
        );
        const leaseMs = task.leaseMs ?? Math.max(60_000, task.intervalMs * 2);
        const claimed = (await this.ds.query(
          `UPDATE "scheduled_task" SET "lease_owner" = $1, "lease_expires_at" = now() + ($2::int * interval '1 millisecond')
           WHERE "name" = $3 AND "next_run_at" <= now() AND ("lease_expires_at" IS NULL OR "lease_expires_at" < now())
           RETURNING "name"`,
          [this.owner, leaseMs, task.name],
        )) as [Array<{ name: string }>, number];
        if (!claimed[0]?.length) continue;
        let error: string | null = null;
        try {
          await task.run(this.abort.signal);
        } catch (e) {
          error = (e as Error).message ?? String(e);
          this.logger.error({ task: task.name, err: e }, 'periodic task failed');
        }
        // The next slot follows the previous slot, but a backlog collapses into one catch-up run.
        await this.ds.query(
          `UPDATE "scheduled_task" SET "lease_owner" = NULL, "lease_expires_at" = NULL, "last_run_at" = now(), "last_error" = $3,
             "next_run_at" = GREATEST("next_run_at" + ($2::int * interval '1 millisecond'), now())
           WHERE "name" = $1 AND "lease_owner" = $4`,
          [task.name, task.intervalMs, error, this.owner],
        );
      } catch (e) {
        this.logger.error({ task: task.name, err: e }, 'scheduler tick failed');
      }
    }
  }
}
