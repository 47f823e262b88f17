/**
 * Resolves `wait(id)` once `done(id)` is called (an item completed: a job's handler ran, a run's
 * completion was read), failing after `ms`. Shared by the in-process peer benchmark and the process
 * mode's client roles; loads nothing of the host.
 */
export class Waiters {
  private readonly pending = new Map<string, () => void>();
  private next = 0;
  constructor(private readonly prefix = 'w') {}
  id(): string {
    return `${this.prefix}${++this.next}`;
  }
  wait(id: string, ms = 30_000): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(`item ${id} did not complete within ${ms} ms`));
      }, ms);
      this.pending.set(id, () => {
        clearTimeout(timer);
        resolve();
      });
    });
  }
  done(id: string | undefined): void {
    const w = id ? this.pending.get(id) : undefined;
    if (!w) return;
    this.pending.delete(id!);
    w();
  }
}
