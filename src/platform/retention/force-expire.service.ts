import { setTimeout as delay } from 'node:timers/promises';
import { Injectable, Logger } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { WiringFault } from '../errors/internal-fault';
import { RetentionCounts, RetentionService, RunKeeper, RunRef } from './retention.service';

/** Why a run was not expired: unknown, not finished yet, or kept (a keeper's reason, or a request holds it). */
export type ForceExpireRefusal = 'not_found' | 'not_terminal' | 'kept';
export type ForceExpireOutcome = 'expired' | ForceExpireRefusal;

/**
 * The owner of the run rows' part of expiring one run now (the runs capability): in `m`'s
 * transaction, locks run `id` when it is terminal and no keeper keeps it, whatever its age, or says
 * why not. Locking skips a run another transaction holds ('kept').
 */
export interface RunExpiryClaimer {
  claimRun(m: EntityManager, id: string, keep: readonly RunKeeper[]): Promise<RunRef | ForceExpireRefusal>;
}

/** How often a run that is still going is looked at again while the seam waits for it to finish. */
const RECHECK_MS = 50;

/**
 * Expires one run now, as if its retention window had passed: the run is claimed like a sweep
 * claims it (terminal, no keeper keeps it) except for its age, and deleted through the sweep's own
 * deletion (`RetentionService.deleteClaimed`) with every row that belongs to it. Only the
 * force-expire seam (./force-expire.listener.ts, a test seam) calls it: production deletes only
 * what the hourly sweep finds expired.
 */
@Injectable()
export class ForceExpireService {
  private readonly logger = new Logger('retention');
  private claimer?: RunExpiryClaimer;

  constructor(
    private readonly ds: DataSource,
    private readonly retention: RetentionService,
  ) {}

  registerRunClaimer(claimer: RunExpiryClaimer): void {
    if (this.claimer) throw new WiringFault('retention: a second claimer of single runs registered');
    this.claimer = claimer;
  }

  /** One attempt, in one transaction. */
  async expire(id: string): Promise<ForceExpireOutcome> {
    const claimer = this.claimer;
    if (!claimer) throw new WiringFault('retention: no claimer of single runs registered');
    const counts: RetentionCounts = { runs: 0, runNodes: 0, events: 0, eventStreams: 0, activityInvocations: 0, approvals: 0, approvalDecisions: 0, idempotencyRecords: 0, artifacts: 0, compensationPlans: 0, interruptCallbacks: 0, workspaceSnapshots: 0 };
    let after: Array<() => Promise<void>> = [];
    const outcome = await this.ds.transaction(async (m): Promise<ForceExpireOutcome> => {
      const claimed = await claimer.claimRun(m, id, this.retention.runKeepers());
      if (typeof claimed === 'string') return claimed;
      after = await this.retention.deleteClaimed(m, [claimed], counts);
      return 'expired';
    });
    await this.retention.afterCommit(after);
    if (outcome === 'expired') this.logger.warn({ msg: 'run expired by the force-expire seam', runId: id, ...counts });
    return outcome;
  }

  /**
   * Expires run `id`, waiting up to `waitMs` for a run that is still going to finish (retention
   * never deletes a live run; the conformance suite asks right after it started one). A run still
   * going after that answers 'not_terminal'.
   */
  async expireWhenFinished(id: string, waitMs: number): Promise<ForceExpireOutcome> {
    const deadline = Date.now() + waitMs;
    for (;;) {
      const outcome = await this.expire(id);
      if (outcome !== 'not_terminal' || Date.now() >= deadline) return outcome;
      await delay(Math.min(RECHECK_MS, Math.max(0, deadline - Date.now())));
    }
  }
}
