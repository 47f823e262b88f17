import type { DataSource } from 'typeorm';
import { ClaimedRow, claimRun, claimRuns, FlushParams, FoldedClaim, FoldedClaims, releaseLease } from './run-store';
import { claimNamedNewcomers } from './run-newcomer-claim';

/** A slot promised to a run being created here (see RunClaimer.reserve). */
export interface SlotReservation {
  readonly tenant?: string;
  /** A slot of the newcomers' reserve: the run's insert claims it only as its tenant's first run. */
  readonly newcomer: boolean;
}

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
  /** Whether a run of the tenant executes here. */
  executes(tenant: string): boolean;
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
  /** The newcomers' claim in flight (see claimNewcomers), and how many runs it may take. */
  private newcomerClaim?: Promise<void>;
  private newcomerClaiming = 0;
  /** Wake-ups no newcomers' claim has served yet: the runs their notifications named, and whether one named none. */
  private readonly named = new Set<string>();
  private unnamed = false;
  /** Slots of the newcomers' reserve promised to runs being created here, and their tenants (one each). */
  private newcomerReserved = 0;
  private readonly arriving = new Set<string>();
  /** The runs executing here in reserve slots (taken by a newcomers' claim while the capacity was full). */
  private readonly newcomers = new Set<string>();
  /** The runs executing here that a newcomers' claim took (in the reserve or not): their writes are urgent. */
  private readonly firsts = new Set<string>();

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
    return this.host.settings.maxActiveRuns - (this.host.active() - this.newcomers.size) - this.reserved - this.claimingSlots;
  }

  /**
   * The newcomers' reserve (fair claims only): slots beyond the engine's capacity that only a run of
   * a tenant with nothing executing (on any replica) may take, one per such tenant, so a tenant's
   * first run starts at once on a saturated engine instead of waiting for a slot to free. A
   * sixteenth of the capacity, at least one.
   */
  newcomerSlots(): number {
    return this.fair ? Math.max(1, Math.floor(this.host.settings.maxActiveRuns / 16)) : 0;
  }

  /** Slots of the newcomers' reserve neither taken, promised to a creation here, nor to a newcomers' claim in flight. */
  private reserveLeft(): number {
    return this.newcomerSlots() - this.newcomers.size - this.newcomerReserved - this.newcomerClaiming;
  }

  /**
   * A slot for a run of `tenant` about to be created here, which its own insert then claims: one of
   * the capacity while there is room; else, with fair claims, one of the newcomers' reserve when the
   * tenant executes nothing here and no other run of it is being created into the reserve here
   * (`newcomer`; its insert claims it only as the tenant's first run, checked by the database: no
   * run of the tenant executing or queued anywhere). Undefined: none, the run is inserted unclaimed.
   * `newcomer` false: not the reserve (the run was found not to be its tenant's first).
   */
  reserve(tenant?: string, newcomer = true): SlotReservation | undefined {
    // Under a tenant cap every run goes through the fair claim, which counts the tenant's active runs.
    if (this.host.stopped() || this.tenantCap) return undefined;
    if (this.room() > 0) {
      this.reserved++;
      return { tenant, newcomer: false };
    }
    if (!newcomer || tenant === undefined || this.reserveLeft() <= 0 || this.arriving.has(tenant) || this.host.executes(tenant)) return undefined;
    this.newcomerReserved++;
    this.arriving.add(tenant);
    return { tenant, newcomer: true };
  }

  /** Frees a slot `reserve` promised (nothing was inserted, or the run was not claimed by it); without one, a slot of the capacity. */
  unreserve(r: SlotReservation = { newcomer: false }): void {
    if (!r.newcomer) {
      this.reserved = Math.max(0, this.reserved - 1);
      return;
    }
    this.newcomerReserved = Math.max(0, this.newcomerReserved - 1);
    if (r.tenant !== undefined) this.arriving.delete(r.tenant);
    // A slot of the reserve is free again: a newcomer that found the reserve full is claimed now.
    this.retryNewcomers();
  }

  /**
   * Starts (`start`) a run its own insert claimed under `r`. A run in the newcomers' reserve takes a
   * slot of the capacity if one freed meanwhile, else keeps its slot of the reserve, and its writes
   * leave at once (as a run a newcomers' claim took).
   */
  admit(r: SlotReservation, runId: string, start: () => void): void {
    if (!r.newcomer) {
      this.unreserve(r);
      return start();
    }
    this.newcomerReserved = Math.max(0, this.newcomerReserved - 1);
    if (r.tenant !== undefined) this.arriving.delete(r.tenant);
    if (this.room() <= 0) this.newcomers.add(runId);
    this.firsts.add(runId);
    start();
    if (!this.host.has(runId)) this.forget(runId);
    this.retryNewcomers();
  }

  /**
   * Claimable runs may be waiting (announced, or created here without a free slot): claim now, and
   * when a slot frees. `named`: the run the notification announced (see run-newcomer-claim.ts), which
   * the newcomers' claim looks up by id unless its tenant executes runs here or has a run being
   * created into the reserve here (then it is no newcomer).
   */
  noteClaimable(named?: { runId: string; tenant: string }): void {
    this.mayHaveWork = true;
    this.wakes++;
    if (this.newcomerSlots()) {
      if (!named) this.unnamed = true;
      // Not a run of a tenant executing here, or being created into the reserve here (its insert not committed yet).
      else if (!this.host.executes(named.tenant) && !this.arriving.has(named.tenant) && !this.host.has(named.runId)) this.named.add(named.runId);
      // A flood of named wake-ups while the reserve is full: one claim over every tenant serves them all.
      if (this.named.size > 64) {
        this.named.clear();
        this.unnamed = true;
      }
    }
    if (!this.host.settings.executing || this.host.stopped()) return;
    void this.wake();
  }

  /** The periodic claim (a notification may have been missed): the newcomers' claim over every tenant, then a claim pass. */
  tick(): Promise<void> {
    if (this.newcomerSlots()) this.unnamed = true;
    return this.wake();
  }

  /**
   * The newcomers' claim, then a claim pass. In that order: a claim pass would take a newcomer's
   * run too (fair claims rank it first), but with a claim's worth of other runs, which it then
   * starts and writes together with them.
   */
  private wake(): Promise<void> {
    const first = this.claimNewcomers();
    return first ? first.then(() => this.claimAvailable()) : this.claimAvailable();
  }

  /** Wake-ups the newcomers' claim has not served wait for a slot of the reserve: one freed. */
  private retryNewcomers(): void {
    if ((this.unnamed || this.named.size) && !this.newcomerClaim) void this.claimNewcomers();
  }

  /**
   * An engine woken by new work first claims into the newcomers' reserve, saturated or not. After
   * notifications that each named their run: those runs by id (run-newcomer-claim.ts), each claimed
   * only as the oldest claimable run of a tenant with no run executing anywhere; after any other
   * wake-up: the fair claim with a cap of one, which offers the same runs of every tenant (the
   * database counts the leases). Either claims nothing while every waiting tenant already executes
   * runs. One such claim at a time (answered: undefined when none is sent); the wake-ups that
   * arrive meanwhile, or while the reserve is full, are served by one more claim after it.
   */
  private claimNewcomers(): Promise<void> | undefined {
    if (!this.newcomerSlots() || this.host.stopped() || !this.host.settings.executing) return undefined;
    if (!this.unnamed && !this.named.size) return undefined;
    if (this.newcomerClaim) return this.newcomerClaim;
    const limit = this.reserveLeft();
    if (limit <= 0) return undefined;
    const ids = this.unnamed ? undefined : [...this.named];
    this.unnamed = false;
    this.named.clear();
    this.newcomerClaiming = limit;
    const sentAt = Date.now();
    const p = { owner: this.host.owner, leaseMs: this.host.settings.leaseMs, limit };
    const claim: Promise<void> = (ids ? claimNamedNewcomers(this.host.ds, { ...p, runIds: ids }) : claimRuns(this.host.ds, { ...p, tenantCap: 1, fair: true }))
      .then(
        (rows) => {
          this.newcomerClaiming = 0;
          for (const r of rows) {
            if (this.host.has(r.id)) continue;
            // In a slot of the capacity while it has room, else of the reserve (the limit leaves one);
            // marked before it starts: its first write already leaves alone.
            if (this.room() <= 0) this.newcomers.add(r.id);
            this.firsts.add(r.id);
            this.host.start(r, sentAt);
            if (!this.host.has(r.id)) this.forget(r.id);
          }
        },
        (e: unknown) => {
          this.newcomerClaiming = 0;
          this.host.log.error({ msg: 'run newcomer claim failed', err: (e as Error).message });
        },
      )
      .finally(() => {
        this.newcomerClaim = undefined;
        this.retryNewcomers();
      });
    this.newcomerClaim = claim;
    return claim;
  }

  /** A run ended here: its slot looks for more work at once, when there may be some. */
  freed(runId?: string): void {
    const reserved = runId !== undefined && this.forget(runId);
    // A slot of the capacity freed while a run holds one of the reserve: that run takes it over.
    const promoted = !reserved && this.room() > 0 ? this.newcomers.values().next().value : undefined;
    if (promoted !== undefined) this.newcomers.delete(promoted);
    if (reserved || promoted !== undefined) {
      // A reserve slot freed: a newcomer that found the reserve full is claimed now.
      this.retryNewcomers();
      if (reserved || this.room() <= 0) return;
    }
    if (this.host.settings.executing && !this.host.stopped() && this.mayHaveWork) void this.claimAvailable();
  }

  /** The claim pass and the single claims in flight, if any (the engine waits for them when stopping). */
  async settled(): Promise<void> {
    await Promise.all([this.claiming?.catch(() => undefined), this.newcomerClaim, ...this.kicks]);
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
    // Each finishing run is executing here until its write answers: its slot is counted once (a newcomer's is the reserve's).
    const freed = Math.min(batch.filter((f) => (f.update.terminal || f.update.release) && !this.newcomers.has(f.runId)).length, this.host.active() - this.newcomers.size);
    const limit = Math.max(0, Math.min(this.room() + freed, 32));
    if (!limit) return none;
    this.claimingSlots += limit;
    return { ...none, limit, epoch: this.wakes };
  }

  /** A run a newcomers' claim took: its writes leave at once, alone (run-flush-batcher.ts). */
  urgent(runId: string): boolean {
    return this.firsts.has(runId);
  }

  /** A run ended here (or never started): answers whether it held a reserve slot. */
  private forget(runId: string): boolean {
    this.firsts.delete(runId);
    return this.newcomers.delete(runId);
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
