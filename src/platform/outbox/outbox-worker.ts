import { DataSource } from 'typeorm';
import { WiringFault } from '../errors/internal-fault';
import type { LocalTaskHandle } from '../scheduler/local-task';
import { PeriodicTaskService } from '../scheduler/periodic-task.service';

export interface OutboxOptions<Row> {
  /**
   * The outbox's table, as its capability owns it: one row per thing to send, keyed by a uuid `key`
   * column, with `status` ('pending' to send, 'delivering' while an attempt holds it, and the
   * capability's terminal states), `attempts`, `next_attempt_at` and `updated_at`.
   */
  table: string;
  key: string;
  /** The columns a claimed row carries (its key and `attempts` among them). */
  returning: readonly string[];
  /** The poll's name on the scheduler (a local task of each replica). */
  name: string;
  /** Whether this replica polls the outbox (OPENWOP_SCHEDULER_ENABLED): retries and rows a dead replica left. */
  poll: boolean;
  pollMs: number;
  /** Attempts one replica runs at once. */
  concurrency: number;
  /** How long a claim holds a row before another replica may take it over. */
  leaseMs: number;
  /** One claimed row's attempt; it records its outcome with `finish` (fenced by the row's `attempts`). */
  attempt(row: Row): Promise<void>;
  /** An attempt that threw, or a claim that failed (the database is away: the next poll tries again). */
  failed(what: 'attempt' | 'claim', err: unknown, row?: Row): void;
}

/**
 * A delivery outbox's worker, the one claim loop of the host's outboxes (webhook deliveries,
 * interrupt callbacks): each replica that polls claims due rows with `FOR UPDATE SKIP LOCKED`, so no
 * two replicas send the same attempt, and a claim is a lease (`next_attempt_at` moves past the
 * attempt's deadline), so the rows of a replica that died mid-attempt are claimed again once it
 * expires. An attempt counts in `attempts`, which fences its outcome: a finish whose claim was lost
 * meanwhile (another replica took the row over) writes nothing. The poll runs every `pollMs` after
 * its last pass and at once when an attempt frees a slot.
 */
export class OutboxWorker<Row extends { attempts: number }> {
  private running = false;
  private readonly inFlight = new Set<Promise<void>>();
  private pollHandle?: LocalTaskHandle;
  private readonly claimDue: string;
  private readonly claimKeys: string;

  constructor(
    private readonly ds: DataSource,
    private readonly scheduler: PeriodicTaskService,
    private readonly o: OutboxOptions<Row>,
  ) {
    const t = quoted(o.table);
    const k = quoted(o.key);
    const claim = (pick: string) =>
      `UPDATE ${t} o
          SET "status" = 'delivering', "attempts" = o."attempts" + 1,
              "next_attempt_at" = now() + make_interval(secs => $2::double precision / 1000), "updated_at" = now()
         FROM (${pick}) c
        WHERE o.${k} = c.${k}
        RETURNING ${o.returning.map((col) => `o.${quoted(col)}`).join(', ')}`;
    this.claimDue = claim(`SELECT ${k} FROM ${t} WHERE "status" IN ('pending', 'delivering') AND "next_attempt_at" <= now() ORDER BY "next_attempt_at" LIMIT $1 FOR UPDATE SKIP LOCKED`);
    this.claimKeys = claim(`SELECT ${k} FROM ${t} WHERE ${k} = ANY($1::uuid[]) AND "status" = 'pending' FOR UPDATE SKIP LOCKED`);
  }

  /** Accepts attempts from now on, and starts the poll when this replica polls (a first pass at once when `wake`). */
  start(opts: { wake?: boolean } = {}): void {
    this.running = true;
    if (!this.o.poll) return;
    this.pollHandle = this.scheduler.every({ name: this.o.name, intervalMs: this.o.pollMs, cadence: 'delay', run: () => this.pass() });
    if (opts.wake) this.pollHandle.wake();
  }

  /** Stops the poll and waits for the attempts in flight. */
  async stop(): Promise<void> {
    this.running = false;
    await this.pollHandle?.stop();
    await Promise.allSettled([...this.inFlight]);
  }

  /** Claims and starts due rows while slots are free and rows come (the poll's pass). */
  async pass(): Promise<void> {
    while (this.running) {
      const free = this.o.concurrency - this.inFlight.size;
      if (free <= 0) return;
      let rows: Row[];
      try {
        rows = await this.claim(free);
      } catch (e) {
        this.o.failed('claim', e);
        return;
      }
      for (const row of rows) this.run(row);
      // Fewer than asked for: nothing else is due now.
      if (rows.length < free) return;
    }
  }

  /** Claims due rows (pending, or delivering with an expired lease): up to `which` of them, or exactly the pending rows of the keys named. */
  async claim(which: number | readonly string[]): Promise<Row[]> {
    if (typeof which !== 'number' && !which.length) return [];
    const [rows] = (await this.ds.query(typeof which === 'number' ? this.claimDue : this.claimKeys, [which, this.o.leaseMs])) as [Row[], number];
    return rows;
  }

  /** Starts the attempt of a claimed row in the background (its slot frees, and wakes the poll, when it ends). */
  run(row: Row): void {
    if (!this.running) return;
    const p: Promise<void> = this.o
      .attempt(row)
      .catch((e: unknown) => this.o.failed('attempt', e, row))
      .finally(() => {
        this.inFlight.delete(p);
        this.pollHandle?.wake();
      });
    this.inFlight.add(p);
  }

  /**
   * Records an attempt's outcome: `set` are the columns written (SQL expressions over the
   * parameters from $3 on, `values`), on the row only while this attempt's claim still holds it.
   */
  async finish(row: Row, set: Record<string, string>, values: unknown[] = []): Promise<void> {
    const columns = Object.entries(set).map(([col, expr]) => `${quoted(col)} = ${expr}`);
    await this.ds.query(
      `UPDATE ${quoted(this.o.table)} SET ${[...columns, '"updated_at" = now()'].join(', ')}
        WHERE ${quoted(this.o.key)} = $1 AND "attempts" = $2 AND "status" = 'delivering'`,
      [(row as unknown as Record<string, unknown>)[this.o.key], row.attempts, ...values],
    );
  }
}

/** A plain identifier, quoted: the table and columns are the capability's constants, never a request's. */
function quoted(identifier: string): string {
  if (!/^[a-z_][a-z0-9_]*$/.test(identifier)) throw new WiringFault(`an outbox's table or column "${identifier}" is not a plain identifier`);
  return `"${identifier}"`;
}
