import { AuditLogService, auditActor } from '../../platform/audit/audit-log.service';
import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { ConflictError, NotFoundError } from '../../platform/errors/domain-error';
import { EventLogService } from '../../platform/events/event-log.service';
import { RunEntity } from './run.entity';
import type { Principal, TenantScope } from '../../platform/identity/principal';
import { ApprovalsService } from '../approvals';
import type { PageRequest } from '../../platform/pagination/page-query';
import { RunEngineService } from './engine/run-engine.service';
import { RunNodeEntity } from './run-node.entity';
import { RunMetrics } from './runs.metrics';
import type { WorkflowDefinition } from './workflow-definition';
import { UUID } from '../../platform/ids';
import { InterruptsService } from './interrupts/interrupts.service';
import { findRun, readRunPage, readRunSnapshot, readRunSnapshotAndSequence, RunDefinitionView, RunPage, RunSnapshot, snapshot, TERMINAL } from './run-snapshot';
import { scopeCondition } from '../../platform/tenancy/workspace-scope';
import { childRunsOf } from './run-variables';

/** The statuses in which a run is still moving by itself: a caller waiting for it to settle keeps waiting. */
const MOVING: ReadonlySet<string> = new Set(['pending', 'running', 'cancelling']);

/**
 * Workflow runs: reads, listing and cancellation; creation is RunCreationService's, launching on
 * another's behalf (the platform's run launcher, child runs) RunLauncher's, run control
 * RunControlService's, execution the engine's.
 */
@Injectable()
export class RunsService {
  constructor(
    private readonly ds: DataSource,
    private readonly engine: RunEngineService,
    private readonly events: EventLogService,
    private readonly approvals: ApprovalsService,
    private readonly metrics: RunMetrics,
    private readonly interrupts: InterruptsService,
    private readonly audit: AuditLogService,
  ) {}

  /** `major`: the protocol major the snapshot is read under (readRunSnapshot). */
  async get(scope: TenantScope, runId: string, manager?: EntityManager, major = 1): Promise<RunSnapshot> {
    return readRunSnapshot(manager ?? this.ds.manager, this.interrupts, scope, runId, { artifacts: true, major });
  }

  /**
   * Waits until the run stops moving by itself (terminal, waiting on an interrupt or an event, or
   * paused) or `timeoutMs` passes, and answers its snapshot then (read under `major`). Nothing is
   * cancelled on timeout. `onProgress` hears each snapshot in which more nodes have completed than in
   * the one before. A run this replica executes is re-read as soon as its execution ends; one
   * executed elsewhere, every 200 ms.
   */
  async settled(
    scope: TenantScope,
    runId: string,
    timeoutMs: number,
    opts: { major?: number; signal?: AbortSignal; onProgress?: (snap: RunSnapshot, completedNodes: number) => void } = {},
  ): Promise<RunSnapshot> {
    const until = Date.now() + timeoutMs;
    let completed = 0;
    for (;;) {
      const snap = await this.get(scope, runId, undefined, opts.major);
      const done = Object.values(snap.nodeStates ?? {}).filter((n) => n.status === 'completed').length;
      if (done > completed && opts.onProgress && MOVING.has(snap.status)) opts.onProgress(snap, done);
      completed = Math.max(completed, done);
      if (!MOVING.has(snap.status) || Date.now() >= until || opts.signal?.aborted) return snap;
      await this.engine.waitLocal(runId, Math.min(200, Math.max(1, until - Date.now())));
    }
  }

  /** The same snapshot and the last sequence of the run's event stream, as one statement saw them (the snapshot's ETag). */
  async getWithSequence(scope: TenantScope, runId: string, major = 1): Promise<{ snapshot: RunSnapshot; lastSequence: number }> {
    return readRunSnapshotAndSequence(this.ds.manager, this.interrupts, scope, runId, { artifacts: true, major });
  }

  /** The run's id and status only (one indexed read; unknown and foreign ids are 404): what a stream needs to open. */
  async state(scope: TenantScope, runId: string): Promise<Pick<RunSnapshot, 'runId' | 'status'>> {
    const params: unknown[] = [runId];
    const rows = UUID.test(runId) ? ((await this.ds.query(`SELECT "id", "status" FROM "run" WHERE "id" = $1 AND ${scopeCondition(scope, params)}`, params)) as Array<{ id: string; status: string }>) : [];
    if (!rows.length) throw new NotFoundError('No such run.');
    return { runId: rows[0].id, status: rows[0].status };
  }

  /** The chain a run of the caller's tenant executes (unknown and foreign ids are 404). */
  async definition(scope: TenantScope, runId: string): Promise<RunDefinitionView> {
    const run = await this.find(scope, runId);
    if (!run) throw new NotFoundError('No such run.');
    const def = run.definition as Partial<WorkflowDefinition> | null;
    return {
      runId: run.id,
      workflowId: run.workflowId ?? `host.${run.kind}`,
      nodes: (def?.nodes ?? []).map((n) => ({ id: n.id, typeId: n.typeId, config: n.config ?? {} })),
      edges: (def?.edges ?? []).map((e) => ({ from: e.from, to: e.to, ...(e.fromPort ? { fromPort: e.fromPort } : {}), ...(e.toPort ? { toPort: e.toPort } : {}) })),
    };
  }

  /** A page of the caller's runs, newest first, optionally of one status or workflow (readRunPage: one statement). */
  async list(scope: TenantScope, q: PageRequest & { status?: string; workflowId?: string }): Promise<RunPage> {
    return readRunPage(this.ds, scope, q);
  }

  /**
   * Requests cancellation: a run nobody executes right now (pending, waiting on an approval, or of
   * a dead replica) is cancelled at once; a running one becomes `cancelling` and its replica aborts
   * the node in flight and writes `run.cancelled`. A run already finished is answered as it is.
   * The run row is locked before any gate of it, as a resolving decision does, so a cancel racing a
   * resolve ends in exactly one of them.
   */
  async cancel(principal: Principal, runId: string, reason = 'cancel-requested'): Promise<RunSnapshot> {
    const run = await this.find(principal, runId);
    if (!run) throw new NotFoundError('No such run.');
    if (run.kind !== 'workflow') throw new ConflictError('run_not_cancellable', 'Only workflow runs can be cancelled.');
    const direct = await this.ds.transaction(async (m) => {
      const [row] = (await m.query(
        `SELECT "status", ("lease_expires_at" IS NULL OR "lease_expires_at" < now()) AS "free", "started_at" FROM "run" WHERE "id" = $1 FOR UPDATE`,
        [run.id],
      )) as Array<{ status: string; free: boolean; started_at: Date | null }>;
      // Cancel is idempotent: a run that already ended answers as it is (200), nothing changes.
      if (TERMINAL.has(row.status)) return 'terminal' as const;
      // Last in each branch: the tenant's audit chain stays locked only until the commit.
      const audited = () =>
        this.audit.record(m, {
          tenant: run.tenant, workspace: run.workspace ?? undefined, actor: auditActor(principal), action: 'run.cancel-requested',
          resource: { type: 'run', id: run.id }, details: { reason, statusBefore: row.status },
        });
      if (!row.free) {
        // The execution that stops it records run.cancelled with this reason (RunStore.cancelReason).
        await m.query(`UPDATE "run" SET "cancel_requested" = true, "status" = 'cancelling', "metadata" = coalesce("metadata", '{}'::jsonb) || jsonb_build_object('cancelReason', $2::text) WHERE "id" = $1`, [run.id, reason]);
        await audited();
        return false;
      }
      // Nobody executes it: finish it here.
      const waiting = await m.getRepository(RunNodeEntity).find({ where: { runId: run.id } });
      const evts: Array<{ type: string; payload: Record<string, unknown>; nodeId?: string }> = [];
      for (const n of waiting.filter((w) => w.status === 'waiting')) {
        if (n.gateId) await this.approvals.cancel(m, n.gateId, principal, 'run cancelled');
        evts.push({ type: 'node.cancelled', nodeId: n.nodeId, payload: { nodeId: n.nodeId, reason: 'run-cancelled' } });
        await m.query(`UPDATE "run_node" SET "status" = 'cancelled', "updated_at" = now() WHERE "run_id" = $1 AND "node_id" = $2`, [run.id, n.nodeId]);
      }
      evts.push({ type: 'run.cancelled', payload: { reason, cancelledBy: principal.principal } });
      await m.query(
        `UPDATE "run" SET "cancel_requested" = true, "status" = 'cancelled', "completed_at" = now(), "current_node_id" = NULL, "lease_owner" = NULL, "lease_expires_at" = NULL WHERE "id" = $1`,
        [run.id],
      );
      await this.events.appendBatch({ tenant: run.tenant, workspace: run.workspace ?? undefined }, run.id, evts, m);
      await audited();
      return true;
    });
    if (direct === 'terminal') return this.get(principal, run.id);
    if (!direct) this.engine.cancelLocal(run.id);
    else {
      this.metrics.runFinished('cancelled', { runId: run.id, tenant: run.tenant, workspace: run.workspace });
      this.events.wake();
    }
    // The cascade (interrupt-profiles.md §openwop-interrupt-cascade-cancel): the run's active child
    // runs are cancelled with it, from the linkage in the database, whoever executes them (or nobody).
    for (const child of await childRunsOf(this.ds.manager, run, run.id)) {
      if (!TERMINAL.has(child.status)) await this.cancel(principal, child.runId, 'parent-cancelled').catch(() => undefined);
    }
    return this.get(principal, run.id);
  }

  /** The tenant's run (and workspace's, when the caller has one); never another tenant's. */
  private find(scope: TenantScope, runId: string, manager?: EntityManager): Promise<RunEntity | undefined> {
    return findRun(manager ?? this.ds.manager, scope, runId);
  }
}
