import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { rowsOf } from '../../platform/database/rows';
import { ConflictError, DomainError, NotFoundError, ValidationError } from '../../platform/errors/domain-error';
import { EventLogService } from '../../platform/events/event-log.service';
import type { Principal } from '../../platform/identity/principal';
import { PauseRequest, RunEngineService } from './engine/run-engine.service';
import { findRun, TERMINAL } from './run-snapshot';
import { RunsService } from './runs.service';

export interface PauseAnswer {
  runId: string;
  status: 'paused';
  pausedAt: string;
}

/** One entry of `POST /v1/runs:bulk-cancel`'s `results`. */
export interface BulkCancelResult {
  runId: string;
  ok: boolean;
  status?: 'cancelling' | 'cancelled';
  error?: { code: string; message: string; details?: Record<string, unknown> };
}

/** Operator control of runs: pause, resume and bulk cancel (a single cancel is RunsService's). */
@Injectable()
export class RunControlService {
  constructor(
    private readonly ds: DataSource,
    private readonly runs: RunsService,
    private readonly events: EventLogService,
    private readonly engine: RunEngineService,
  ) {}

  /**
   * Cancels each run independently, in request order (one failing never blocks another): `ok` with
   * the post-acceptance status (`cancelling`, or `cancelled` when nothing was executing it or it was
   * cancelled already, so a repeat is idempotent), else the reason: `not_found` (unknown or another
   * tenant's), `run_terminal` (completed or failed), `run_not_cancellable`.
   */
  async bulkCancel(principal: Principal, runIds: readonly string[], reason = 'bulk-cancel-requested'): Promise<BulkCancelResult[]> {
    const results: BulkCancelResult[] = [];
    for (const runId of runIds) {
      try {
        const snap = await this.runs.cancel(principal, runId, reason);
        if (snap.status === 'cancelled' || snap.status === 'cancelling') results.push({ runId, ok: true, status: snap.status });
        // The run finished on its own between the request and the cancel.
        else results.push({ runId, ok: false, error: { code: 'run_terminal', message: `The run is already ${snap.status}.`, details: { runStatus: snap.status } } });
      } catch (e) {
        if (e instanceof DomainError && e.code === 'run_not_active') {
          const status = String(e.details?.status ?? '');
          if (status === 'cancelled') results.push({ runId, ok: true, status: 'cancelled' });
          else results.push({ runId, ok: false, error: { code: 'run_terminal', message: e.message, details: { runStatus: status } } });
        } else if (e instanceof DomainError) {
          results.push({ runId, ok: false, error: { code: e.code, message: e.message } });
        } else {
          throw e;
        }
      }
    }
    return results;
  }

  /**
   * An operator's pause (`POST /v1/runs/{runId}:pause`). A run nobody executes (pending, or between
   * claims) is paused at once; a running one stops starting nodes (`drain-current-node` lets the
   * nodes in flight finish, `immediate` aborts them to run again on resume) and its replica writes
   * `run.paused` and releases the lease. Already paused, or pause pending: 409 `details.runStatus`,
   * unless the same Idempotency-Key repeats the pause (202 with the first answer). Terminal,
   * cancelling or waiting runs: 409 `details.runStatus`.
   */
  async pause(principal: Principal, runId: string, body: { reason?: string; drainPolicy?: PauseRequest['drainPolicy'] }, idempotencyKey?: string): Promise<PauseAnswer> {
    if (idempotencyKey !== undefined && !/^[\x21-\x7e]{1,255}$/.test(idempotencyKey)) {
      throw new ValidationError('Idempotency-Key must be 1 to 255 visible ASCII characters.', { header: 'Idempotency-Key' });
    }
    const run = await this.find(principal, runId);
    if (!run) throw new NotFoundError('No such run.');
    if (run.kind !== 'workflow') throw new ConflictError('run_not_pausable', 'Only workflow runs can be paused.', { runStatus: run.status });
    const drainPolicy = body.drainPolicy ?? 'drain-current-node';
    const result = await this.ds.transaction(async (m) => {
      const [row] = (await m.query(
        `SELECT "status", ("lease_expires_at" IS NULL OR "lease_expires_at" < now()) AS "free", "metadata", "cancel_requested" FROM "run" WHERE "id" = $1 FOR UPDATE`,
        [run.id],
      )) as Array<{ status: string; free: boolean; metadata: Record<string, unknown> | null; cancel_requested: boolean }>;
      const prior = (row.metadata?.pause ?? undefined) as PauseRequest | undefined;
      if (prior) {
        // The first answer again (it carried the time the pause was accepted).
        if (idempotencyKey && prior.idempotencyKey === idempotencyKey) return { answer: { runId: run.id, status: 'paused' as const, pausedAt: prior.requestedAt }, direct: false, request: prior };
        // Accepted pauses answered `paused` (202): a run still draining its current node is reported paused too, as that answer said.
        throw new ConflictError('run_not_pausable', `The run is already ${row.status === 'paused' ? 'paused' : 'pausing'}.`, { runStatus: 'paused', pausedAt: prior.pausedAt ?? prior.requestedAt });
      }
      if (TERMINAL.has(row.status)) throw new ConflictError('run_terminal', `The run is already ${row.status}.`, { runStatus: row.status });
      if ((row.status !== 'pending' && row.status !== 'running') || row.cancel_requested) {
        throw new ConflictError('run_not_pausable', `A ${row.status} run cannot be paused.`, { runStatus: row.status });
      }
      const [{ now }] = (await m.query(`SELECT to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS "now"`)) as Array<{ now: string }>;
      const request: PauseRequest = { drainPolicy, requestedAt: now, fromStatus: row.status, ...(body.reason ? { reason: body.reason } : {}), ...(idempotencyKey ? { idempotencyKey } : {}) };
      if (row.free) {
        // Nobody executes it: paused here and now.
        request.pausedAt = now;
        await m.query(`UPDATE "run" SET "status" = 'paused', "metadata" = jsonb_set(coalesce("metadata", '{}'::jsonb), '{pause}', $2::jsonb) WHERE "id" = $1`, [run.id, JSON.stringify(request)]);
        await this.events.appendBatch({ tenant: run.tenant, workspace: run.workspace ?? undefined }, run.id, [{ type: 'run.paused', payload: { drainPolicy, ...(body.reason ? { reason: body.reason } : {}) } }], m);
        return { answer: { runId: run.id, status: 'paused' as const, pausedAt: now }, direct: true, request };
      }
      await m.query(`UPDATE "run" SET "metadata" = jsonb_set(coalesce("metadata", '{}'::jsonb), '{pause}', $2::jsonb) WHERE "id" = $1`, [run.id, JSON.stringify(request)]);
      return { answer: { runId: run.id, status: 'paused' as const, pausedAt: now }, direct: false, request };
    });
    if (result.direct) this.events.wake();
    else this.engine.pauseLocal(run.id, result.request);
    return result.answer;
  }

  /** `POST /v1/runs/{runId}:resume`: a paused run continues where it stopped (`run.resumed`); anything else is 409 `details.runStatus`. */
  async resume(principal: Principal, runId: string, reason?: string): Promise<{ runId: string; status: 'running'; resumedAt: string }> {
    const run = await this.find(principal, runId);
    if (!run) throw new NotFoundError('No such run.');
    const resumedAt = await this.ds.transaction(async (m) => {
      const [row] = (await m.query(`SELECT "status", "metadata" FROM "run" WHERE "id" = $1 FOR UPDATE`, [run.id])) as Array<{ status: string; metadata: Record<string, unknown> | null }>;
      if (row.status !== 'paused') throw new ConflictError('run_not_paused', `The run is ${row.status}, not paused.`, { runStatus: row.status });
      const prior = (row.metadata?.pause ?? {}) as Partial<PauseRequest>;
      const back = prior.fromStatus === 'pending' ? 'pending' : 'running';
      const [{ now }] = rowsOf<{ now: string }>(await m.query(
        `UPDATE "run" SET "status" = $2, "metadata" = coalesce("metadata", '{}'::jsonb) - 'pause', "lease_owner" = NULL, "lease_expires_at" = NULL WHERE "id" = $1
         RETURNING to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS "now"`,
        [run.id, back],
      ));
      await this.events.appendBatch({ tenant: run.tenant, workspace: run.workspace ?? undefined }, run.id, [{ type: 'run.resumed', payload: { ...(reason ? { reason } : {}) } }], m);
      return now;
    });
    this.events.wake();
    this.engine.kick(run.id);
    return { runId: run.id, status: 'running', resumedAt };
  }

  private find(principal: Principal, runId: string) {
    return findRun(this.ds.manager, principal, runId);
  }
}
