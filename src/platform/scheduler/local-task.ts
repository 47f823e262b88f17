/**
 * Work every replica does on its own, at an interval (not once across replicas: that is a
 * PeriodicTask): the run engine's claim ticker, the goal scheduler's pass, the outbox polls of the
 * webhooks and the audit checkpoint export. Each loop claims its rows in the database with SKIP
 * LOCKED or a lease, which is what makes it safe on any number of replicas; the loop only says when
 * to look again.
 */
export interface LocalTask {
  /** Unique, stable name (logs, the scheduler registry). */
  name: string;
  intervalMs: number;
  /**
   * `rate` (default): a pass every intervalMs whatever each one takes, a tick while one runs
   * skipped; `delay`: the next pass intervalMs after the previous one ended.
   */
  cadence?: 'rate' | 'delay';
  /** One pass. Passes of a task never overlap. A failure is the task's to log; it never stops the loop. */
  run(): Promise<unknown>;
}

/** A started local task. */
export interface LocalTaskHandle {
  /** Runs a pass now (after the running one, if any), then the cadence goes on from it. */
  wake(): void;
  /** No pass starts any more; resolves once the running one ended. */
  stop(): Promise<void>;
}

/** The one timer of a local task (see PeriodicTaskService.every). */
export class LocalTaskLoop implements LocalTaskHandle {
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;
  private again = false;
  private stopped = false;

  constructor(
    private readonly task: LocalTask,
    private readonly onError: (err: unknown) => void,
  ) {}

  /** The interval a `rate` task is ticked by (the scheduler registry keeps it), or nothing for a `delay` task. */
  start(): NodeJS.Timeout | undefined {
    if (this.task.cadence === 'delay') {
      this.arm();
      return undefined;
    }
    this.timer = setInterval(() => this.tick(), this.task.intervalMs);
    this.timer.unref();
    return this.timer;
  }

  wake(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    if (this.task.cadence === 'delay' && this.timer) clearTimeout(this.timer);
    this.pass();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) {
      if (this.task.cadence === 'delay') clearTimeout(this.timer);
      else clearInterval(this.timer);
    }
    await this.running;
  }

  private tick(): void {
    if (this.stopped || this.running) return;
    this.pass();
  }

  private pass(): void {
    this.running = (async () => {
      try {
        await this.task.run();
      } catch (e) {
        this.onError(e);
      }
    })().finally(() => {
      this.running = undefined;
      if (this.stopped) return;
      if (this.again) {
        this.again = false;
        this.pass();
      } else if (this.task.cadence === 'delay') this.arm();
    });
  }

  private arm(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => this.pass(), this.task.intervalMs);
    this.timer.unref();
  }
}
