import type { DataSource } from 'typeorm';
import { ClaimedRow, claimRun, claimRuns, FlushParams, FoldedClaim, FoldedClaims, releaseLease } from './run-store';

/** What the claimer needs of the engine it claims for. */
export interface ClaimerHost {
  readonly ds: DataSource;
  readonly owner: string;
  readonly settings: { maxActiveRuns: number; leaseMs: number; executing: boolean; admission?: { tenantMaxActiveRuns?: number; fairClaims?: boolean } };
  /** Runs executing here. */
  active(): number;
  /** Whether the engine is stopping (nothing more is claimed). */
  stopped(): boolean;
  has(runId: string): boolean;
  /** Starts a claimed run; `sentAt`: when its claim was sent (its lease counts from there). */
  start(row: ClaimedRow, sentAt: number): void;
  /** Hands back the lease of a run a write claimed while the engine stops (default: released here, unawaited). */
  handBack?(row: ClaimedRow): void;
  /** A claim pass worked (true) or failed (false): the engine's health. */
  health(ok: boolean): void;
  log: { error(o: { msg: string } & Record<string, unknown>): void };
}

/**
 * How a replica finds work: slots (capacity less the runs executing, promised to creations here and
 * being claimed), claim passes (the oldest claimable runs, in halves of the capacity, so one half's
 * runs are written while the other half is claimed and executed), claims folded into the engine's
 * writes (the slots a write frees refilled in its own statement), a run claimed at once when it is
 * created or released here. A freed slot claims only while runs may be waiting (a claim that filled
 * its limit, a notification, a run created here without a free slot): an idle replica sends no
 * claim that finds nothing after every run; the periodic claim covers the rest.
 */
export class RunClaimer implements FoldedClaims {
  /** Slots promised to runs being created here, claimed by their own insert (see reserve). */
  private reserved = 0;
  /** Slots promised to claims in flight (a claim pass's, or one folded into a write). */
  private claimingSlots = 0;
  private mayHaveWork = true;
  /** Counts wake-ups: a claim that comes back short says "nothing waits" only if none arrived since it was sent. */
  private wakes = 0;
  /** A wake-up arrived while a claim pass was out: another pass follows it. */
  private claimAgain = false;
  private claiming?: Promise<void>;
  /** Claims of single runs in flight (kick), which a stopping engine waits for like a claim pass. */
  private readonly kicks = new Set<Promise<void>>();

  constructor(private readonly host: ClaimerHost) {}

  /** The per-tenant cap of active runs (OPENWOP_TENANT_MAX_ACTIVE_RUNS), 0: none. */
  private get tenantCap(): number {
    return this.host.settings.admission?.tenantMaxActiveRuns ?? 0;
  }

  /** Whether claims are shared between tenants (OPENWOP_FAIR_CLAIMS, or a tenant cap); else oldest first. */
  private get fair(): boolean {
    return !!this.host.settings.admission?.fairClaims || this.tenantCap > 0;
  }

  room(): number {
    return this.host.settings.maxActiveRuns - this.host.active() - this.reserved - this.claimingSlots;
  }

  /** A slot for a run about to be created here (its insert claims it): true when there is one. */
  reserve(): boolean {
    // Under a tenant cap every run goes through the fair claim, which counts the tenant's active runs.
    if (this.host.stopped() || this.room() <= 0 || this.tenantCap) return false;
    this.reserved++;
    return true;
  }

  unreserve(): void {
    this.reserved = Math.max(0, this.reserved - 1);
  }

  /** Claimable runs may be waiting (announced, or created here without a free slot): claim now, and when a slot frees. */
  noteClaimable(): void {
    this.mayHaveWork = true;
    this.wakes++;
    if (this.host.settings.executing && !this.host.stopped()) void this.claimAvailable();
  }

  /** A run ended here: its slot looks for more work at once, when there may be some. */
  freed(): void {
    if (this.host.settings.executing && !this.host.stopped() && this.mayHaveWork) void this.claimAvailable();
  }

  /** The claim pass and the single claims in flight, if any (the engine waits for them when stopping). */
  async settled(): Promise<void> {
    await Promise.all([this.claiming?.catch(() => undefined), ...this.kicks]);
  }

  /** Claims runs nobody holds (new, released, or of a dead replica) while there is capacity. */
  claimAvailable(): Promise<void> {
    if (this.host.stopped()) return Promise.resolve();
    if (this.claiming) {
      // Its claim may have been sent before what woke us committed: one more pass after it.
      this.claimAgain = true;
      return this.claiming;
    }
    const pass = (async () => {
      try {
        for (;;) {
          const room = this.room();
          if (room <= 0 || this.host.stopped()) break;
          const limit = Math.min(room, 32, Math.ceil(this.host.settings.maxActiveRuns / 2));
          const epoch = this.wakes;
          const sentAt = Date.now();
          this.claimingSlots += limit;
          let rows: ClaimedRow[];
          try {
            rows = await claimRuns(this.host.ds, { owner: this.host.owner, leaseMs: this.host.settings.leaseMs, limit, tenantCap: this.tenantCap, fair: this.fair });
          } finally {
            this.claimingSlots -= limit;
          }
          for (const r of rows) this.host.start(r, sentAt);
          this.claimed(rows.length, limit, epoch);
          if (rows.length < limit) break;
        }
        // A pass that worked: a failure reported earlier (the database was away) is over.
        this.host.health(true);
      } catch (e) {
        this.mayHaveWork = true;
        this.host.log.error({ msg: 'run claim pass failed', err: (e as Error).message });
        this.host.health(false);
      }
    })();
    // Cleared in a later microtask, so a pass that ends synchronously cannot leave itself behind.
    const claiming: Promise<void> = pass.finally(() => {
      if (this.claiming === claiming) this.claiming = undefined;
      if (this.claimAgain) {
        this.claimAgain = false;
        if (this.mayHaveWork && this.host.settings.executing) void this.claimAvailable();
      }
    });
    this.claiming = claiming;
    return claiming;
  }

  /** Claims and starts one run right away (it was created or released here). Retries briefly: the caller's transaction may still be committing. */
  kick(runId: string, attempts = 5): void {
    if (this.host.stopped() || this.host.has(runId)) return;
    // Under a tenant cap a run is claimed only by the fair claim (a claim of one run would not count its tenant's).
    if (this.tenantCap) return this.noteClaimable();
    const kick: Promise<void> = (async () => {
      for (let i = 0; i < attempts && !this.host.stopped(); i++) {
        if (this.room() <= 0) return;
        const sentAt = Date.now();
        const row = await claimRun(this.host.ds, { runId, owner: this.host.owner, leaseMs: this.host.settings.leaseMs });
        if (row) return this.host.start(row, sentAt);
        await new Promise((r) => setTimeout(r, 20 * (i + 1)));
      }
    })()
      .catch((e: unknown) => this.host.log.error({ msg: 'could not claim a run', runId, err: (e as Error).message }))
      .finally(() => this.kicks.delete(kick));
    this.kicks.add(kick);
  }

  /**
   * How many runs a write of these flushes may claim: the slots its terminal and releasing flushes
   * free plus those free now, while runs may be waiting (none when the engine does not claim on its own).
   */
  take(batch: FlushParams[]): FoldedClaim {
    const none = { owner: this.host.owner, leaseMs: this.host.settings.leaseMs, limit: 0, tenantCap: this.tenantCap, fair: this.fair };
    if (!this.host.settings.executing || this.host.stopped() || !this.mayHaveWork) return none;
    // Each finishing run is executing here until its write answers: its slot is counted once.
    const freed = Math.min(batch.filter((f) => f.update.terminal || f.update.release).length, this.host.active());
    const limit = Math.max(0, Math.min(this.room() + freed, 32));
    if (!limit) return none;
    this.claimingSlots += limit;
    return { ...none, limit, epoch: this.wakes };
  }

  /** A claim came back: a full one says more may wait; a short one, that nothing does (unless woken since it was sent). */
  private claimed(got: number, limit: number, epoch: number): void {
    // Under a tenant cap a short claim may have left a capped tenant's runs waiting: a freed slot looks again.
    if (got >= limit || this.tenantCap) this.mayHaveWork = true;
    else if (this.wakes === epoch) this.mayHaveWork = false;
  }

  /** What a write claimed (before its flushes' executions see their results, so their slots count as taken); `failed`: the write failed, nothing was claimed. */
  give(claimed: ClaimedRow[], claim: FoldedClaim, sentAt: number, failed = false): void {
    this.claimingSlots -= claim.limit;
    if (!failed) this.claimed(claimed.length, claim.limit, claim.epoch ?? this.wakes);
    for (const r of claimed) {
      // Stopping: hand the lease back (best effort; it expires anyway).
      if (!this.host.stopped()) this.host.start(r, sentAt);
      else if (this.host.handBack) this.host.handBack(r);
      else void releaseLease(this.host.ds, { runId: r.id, owner: this.host.owner, fence: r.fence }).catch(() => undefined);
    }
  }
}
