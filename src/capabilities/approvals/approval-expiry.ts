import { Logger } from '@nestjs/common';
import type { DataSource, EntityManager } from 'typeorm';
import { EventLogService, HOST_STREAM } from '../../platform/events/event-log.service';
import type { TenantScope } from '../../platform/identity/principal';
import { ApprovalEntity } from './approval.entity';

/** How often a gate's own timer looks again when the gate is not closable yet (its transaction not committed, a clock a little behind). */
const RECHECK_MS = 250;
const MAX_RECHECKS = 40;

/**
 * The expiry of approval gates (RFC 0093; interrupt.md §Rejection, RFC 0223): a gate left unresolved
 * past its deadline is resolved rejected by the host, whatever the workflow asked to happen on a
 * timeout (a timeout never grants). Closing one writes `approval.rejected` (`reason: "timeout"`) and
 * `interrupt.resolved` with `reason: "timeout"` and a reject resume value, on the host's feed and the
 * run's own log, then tells its subject (a suspended run resumes and its node fails).
 *
 * The periodic sweep bounds every gate; a gate whose timeout is shorter than the sweep interval (a
 * workflow's per-gate `timeoutMs`) gets a timer of its own in the process that opened it, so it
 * closes on time. A timer lost with its process leaves the gate to the sweep of any replica.
 */
export class GateExpiry {
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly log = new Logger('approvals');
  private stopped = false;

  constructor(
    private readonly ds: DataSource,
    private readonly events: EventLogService,
    private readonly closed: (m: EntityManager, gate: ApprovalEntity) => Promise<void>,
  ) {}

  /** Auto-rejects every pending gate past its deadline (fail closed). Returns how many expired. */
  async expireDue(): Promise<number> {
    return this.ds.transaction(async (m) => {
      const expired = (await m.query(
        `UPDATE "approval" SET "state" = 'expired', "reason" = 'timeout', "decided_at" = now(), "updated_at" = now()
         WHERE "id" IN (SELECT "id" FROM "approval" WHERE "state" = 'pending' AND "expires_at" <= now() FOR UPDATE SKIP LOCKED)
         RETURNING "id"`,
      )) as [Array<{ id: string }>, number];
      for (const { id } of expired[0]) await this.afterExpiry(m, await m.getRepository(ApprovalEntity).findOneByOrFail({ id }));
      return expired[0].length;
    });
  }

  /** Closes one pending gate found past its deadline inside a deciding transaction (it holds the gate's lock). */
  async expire(m: EntityManager, gate: ApprovalEntity): Promise<void> {
    await m.getRepository(ApprovalEntity).update({ id: gate.id }, { state: 'expired', reason: 'timeout', decidedAt: () => 'now()' });
    await this.afterExpiry(m, gate);
  }

  /** A timer for a gate that must close before the next sweep (`timeoutMs` shorter than the sweep interval). */
  schedule(gateId: string, timeoutMs: number, sweepIntervalMs: number): void {
    if (this.stopped || !(timeoutMs < sweepIntervalMs)) return;
    this.arm(gateId, timeoutMs + 20, 0);
  }

  stop(): void {
    this.stopped = true;
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
  }

  private arm(gateId: string, delayMs: number, rechecks: number): void {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      void this.fire(gateId, rechecks);
    }, delayMs);
    timer.unref();
    this.timers.add(timer);
  }

  private async fire(gateId: string, rechecks: number): Promise<void> {
    if (this.stopped) return;
    try {
      await this.expireDue();
      const row = await this.ds.getRepository(ApprovalEntity).findOne({ select: { id: true, state: true }, where: { id: gateId } });
      // Not written yet (its transaction still open) or not yet past its deadline on the database's clock: look again.
      if ((!row || row.state === 'pending') && rechecks < MAX_RECHECKS) this.arm(gateId, RECHECK_MS, rechecks + 1);
    } catch (err) {
      if (!this.stopped) this.log.warn({ msg: 'an approval gate timer could not close its gate; the periodic sweep will', gateId, err: (err as Error)?.message });
    }
  }

  private async afterExpiry(m: EntityManager, gate: ApprovalEntity): Promise<void> {
    const scope: TenantScope = { tenant: gate.tenant, workspace: gate.workspaceKey || undefined };
    await this.events.append(scope, HOST_STREAM, 'approval.rejected', { gateId: gate.id, principal: 'system', reason: 'timeout' }, { manager: m, correlationId: gate.subjectId });
    // The resolution, as a decision writes it, with nobody resolving: the host's timer rejected it.
    const resolved = {
      nodeId: gate.nodeId ?? gate.subjectKind,
      interruptId: gate.id,
      kind: gate.kind ?? 'approval',
      ...(gate.runId ? { runId: gate.runId } : {}),
      resolvedAt: new Date().toISOString(),
      resumeValue: { action: 'reject' },
      reason: 'timeout',
    };
    const streams = [HOST_STREAM, ...(gate.runId ? [gate.runId] : [])];
    await this.events.appendMany(
      streams.map((streamId) => ({ scope, streamId, type: 'interrupt.resolved', payload: resolved, correlationId: gate.subjectId, ...(streamId === gate.runId && gate.nodeId ? { nodeId: gate.nodeId } : {}) })),
      { manager: m },
    );
    await this.closed(m, gate);
  }
}
