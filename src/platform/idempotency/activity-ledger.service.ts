import { createHash, randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { InvariantViolation } from '../errors/internal-fault';

/** How long an invocation-log entry is kept (idempotency.md guarantee 4: recommended 14 days). */
export const ACTIVITY_RETENTION_SEC = 14 * 24 * 3600;
/** How long an executor that lost the claim waits for the winner's persisted outcome. */
const WAIT_FOR_WINNER_MS = 30_000;

/** What a logical effect identity is computed from (idempotency.md §"Idempotency key composition"). */
export interface ActivityIdentity {
  tenant: string;
  runId: string;
  nodeId: string;
  /** The ordinal of the logical effect within the node's execution (never the attempt). */
  ordinal: number;
  /** A stable id of the effect, e.g. `stripe:create-charge`. */
  providerKey: string;
  /**
   * The node's execution ordinal (1 for its first execution; a node a loop re-enters executes again): one more than
   * its terminal events before this execution, so a retry or a takeover of the same execution keeps it.
   */
  execution?: number;
}

/** The outcome of one executor reaching an effect: the effect's result and whether this executor performed it. */
export interface ActivityOutcome<T> {
  logicalInvocationId: string;
  result: T;
  performed: boolean;
}

/** The failure persisted for an effect that failed, thrown again to every executor that reaches it. */
export class ActivityFailedError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'ActivityFailedError';
  }
}

/**
 * base64url(sha256("openwop:activity:v2\0" tenant \0 runId \0 nodeId \0 ordinal \0 providerKey)),
 * unpadded, and for a node's second and later executions (a loop) `\0 execution` appended: two
 * executions are two logical invocations (idempotency.md: distinct identities). The identity names
 * the effect the workflow intends, so every retry of it (and every concurrent executor re-running
 * the node from its start) mints the same value.
 */
export function logicalInvocationId(id: ActivityIdentity): string {
  for (const f of [id.tenant, id.runId, id.nodeId, id.providerKey]) if (f.includes('\0')) throw new InvariantViolation('an activity identity field contains NUL');
  if (!Number.isInteger(id.ordinal) || id.ordinal < 0) throw new InvariantViolation('an activity ordinal is a non-negative integer');
  if (id.execution !== undefined && (!Number.isInteger(id.execution) || id.execution < 0)) throw new InvariantViolation('an execution ordinal is a non-negative integer');
  const parts = [id.tenant, id.runId, id.nodeId, String(id.ordinal), id.providerKey, ...(id.execution !== undefined && id.execution > 1 ? [String(id.execution)] : [])];
  return createHash('sha256').update(['openwop:activity:v2', ...parts].join('\0')).digest('base64url');
}

/**
 * The Layer-2 invocation log. `perform` is the chokepoint every side effect of a node goes
 * through: it claims the effect's identity with an insert-if-absent (one statement, so at most one
 * executor wins however many race), performs the effect only on a win and persists its result or
 * failure; an executor that loses waits for the persisted outcome and returns it (or throws the
 * persisted failure) without performing anything.
 */
@Injectable()
export class ActivityLedger {
  constructor(private readonly ds: DataSource) {}

  async perform<T>(identity: ActivityIdentity, effect: (logicalInvocationId: string) => Promise<T>, opts: { logicalInvocationId?: string; signal?: AbortSignal } = {}): Promise<ActivityOutcome<T>> {
    const id = opts.logicalInvocationId ?? logicalInvocationId(identity);
    const owner = randomUUID();
    const won = (await this.ds.query(
      `INSERT INTO "activity_invocation" ("logical_invocation_id", "tenant", "run_id", "node_id", "ordinal", "provider_key", "state", "owner", "expires_at")
       VALUES ($1, $2, $3, $4, $5, $6, 'pending', $7, now() + make_interval(secs => $8))
       ON CONFLICT ("logical_invocation_id") DO NOTHING RETURNING "owner"`,
      [id, identity.tenant, identity.runId, identity.nodeId, identity.ordinal, identity.providerKey, owner, ACTIVITY_RETENTION_SEC],
    )) as Array<{ owner: string }>;
    if (!won.length) return { logicalInvocationId: id, result: (await this.awaitOutcome(id, identity.tenant, opts.signal)) as T, performed: false };
    let result: T;
    try {
      result = await effect(id);
    } catch (e) {
      const code = typeof (e as { code?: unknown }).code === 'string' ? (e as { code: string }).code : 'activity_failed';
      await this.ds.query(`UPDATE "activity_invocation" SET "state" = 'failed', "result" = $3::jsonb WHERE "logical_invocation_id" = $1 AND "owner" = $2`, [
        id,
        owner,
        JSON.stringify({ error: { code, message: (e as Error).message ?? String(e) } }),
      ]);
      throw e;
    }
    await this.ds.query(`UPDATE "activity_invocation" SET "state" = 'completed', "result" = $3::jsonb WHERE "logical_invocation_id" = $1 AND "owner" = $2`, [id, owner, JSON.stringify({ value: result ?? null })]);
    return { logicalInvocationId: id, result, performed: true };
  }

  /**
   * The invocation log of one run, oldest first (the effect ledger a run's `GET .../effects` projects):
   * identity and timing only, never the recorded result.
   */
  async invocationsOf(tenant: string, runId: string): Promise<Array<{ logicalInvocationId: string; nodeId: string; ordinal: number; providerKey: string; state: string; createdAt: Date }>> {
    const rows = (await this.ds.query(
      `SELECT "logical_invocation_id", "node_id", "ordinal", "provider_key", "state", "created_at" FROM "activity_invocation" WHERE "tenant" = $1 AND "run_id" = $2 ORDER BY "created_at", "node_id", "ordinal"`,
      [tenant, runId],
    )) as Array<{ logical_invocation_id: string; node_id: string; ordinal: number; provider_key: string; state: string; created_at: Date }>;
    return rows.map((r) => ({ logicalInvocationId: r.logical_invocation_id, nodeId: r.node_id, ordinal: Number(r.ordinal), providerKey: r.provider_key, state: r.state, createdAt: new Date(r.created_at) }));
  }

  private async awaitOutcome(id: string, tenant: string, signal?: AbortSignal): Promise<unknown> {
    const until = Date.now() + WAIT_FOR_WINNER_MS;
    for (;;) {
      const [row] = (await this.ds.query(`SELECT "state", "result" FROM "activity_invocation" WHERE "logical_invocation_id" = $1 AND "tenant" = $2`, [id, tenant])) as Array<{ state: string; result: Record<string, unknown> | null }>;
      if (!row) throw new InvariantViolation('the invocation log lost a claimed effect');
      if (row.state === 'completed') return (row.result ?? {}).value ?? null;
      if (row.state === 'failed') {
        const err = ((row.result ?? {}).error ?? {}) as { code?: string; message?: string };
        throw new ActivityFailedError(err.code ?? 'activity_failed', err.message ?? 'The effect failed.');
      }
      if (signal?.aborted) throw new ActivityFailedError('aborted', 'the node was aborted');
      if (Date.now() > until) throw new ActivityFailedError('activity_in_flight', 'Another executor holds this effect and has not finished it.');
      await new Promise((r) => setTimeout(r, 25));
    }
  }
}

/**
 * The effect surface of one node execution (`NodeExecutionContext.effect`): each call is the next
 * logical effect of the node, its ordinal assigned synchronously when called (before any await), so
 * an execution that re-runs the node from the start mints the same identities in the same order.
 */
export function effectRunner(ledger: ActivityLedger, base: Omit<ActivityIdentity, 'ordinal' | 'providerKey'>, signal?: AbortSignal, onMint?: (id: string) => void) {
  let ordinal = 0;
  return <T>(providerKey: string, effect: (logicalInvocationId: string) => Promise<T>): Promise<T> => {
    const identity = { ...base, ordinal: ordinal++, providerKey };
    const id = logicalInvocationId(identity);
    onMint?.(id);
    return ledger.perform(identity, effect, { logicalInvocationId: id, signal }).then((o) => o.result);
  };
}
