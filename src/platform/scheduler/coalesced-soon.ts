/**
 * Brings a piece of work forward (an export, a flush), coalesced: `request()` schedules `work` after
 * `delayMs`; requests while one is pending join it, and two runs are at least `minIntervalMs` apart,
 * however many requests arrive. The timer never keeps the process alive. Used by the OTLP exports
 * (traces and metrics) to leave soon after a run ends instead of at their next interval.
 */
export class CoalescedSoon {
  private timer?: ReturnType<typeof setTimeout>;
  private last = 0;

  constructor(
    private readonly work: () => void,
    private readonly delayMs = 250,
    private readonly minIntervalMs = 1000,
  ) {}

  request(): void {
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.last = Date.now();
      this.work();
    }, Math.max(this.delayMs, this.last + this.minIntervalMs - Date.now()));
    this.timer.unref?.();
  }

  /** Drops a pending run (on shutdown). */
  cancel(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }
}
