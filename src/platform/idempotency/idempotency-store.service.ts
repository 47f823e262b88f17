import { createHash, randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { canonicalJson } from '../artifacts/artifact-registry.service';
import { ConflictError, DomainError, ValidationError } from '../errors/domain-error';
import type { TenantScope } from '../identity/principal';

/**
 * How long a duplicate of a request still in flight waits for its outcome before it is answered
 * `409 idempotency_in_flight` (idempotency.md, RFC 0002 §2: at least 5 s). Advertised as
 * `limits.idempotencyAckTimeoutSec`.
 */
export const IDEMPOTENCY_ACK_TIMEOUT_SEC = 5;
/** How long a final outcome is replayed (idempotency.md rule 3: at least 24 hours). */
export const IDEMPOTENCY_RETENTION_SEC = 24 * 3600;
/** The response header of an answer served from an idempotency record. */
export const REPLAY_HEADER = 'openwop-idempotent-replay';

/** 1-255 visible ASCII characters (idempotency.md: any URL-safe string of at most 255). */
export function checkIdempotencyKey(key: string | undefined): void {
  if (key !== undefined && !/^[\x21-\x7e]{1,255}$/.test(key)) {
    throw new ValidationError('Idempotency-Key must be 1 to 255 visible ASCII characters.', { header: 'Idempotency-Key' });
  }
}

/** The digest of a canonicalized request (the mismatch rule compares it). */
export function requestDigest(request: unknown): string {
  return createHash('sha256').update(canonicalJson(request ?? null)).digest('hex');
}

export interface IdempotentAnswer<T> {
  status: number;
  body: T;
  /** Served from the record of an earlier request with the same key. */
  replayed: boolean;
}

export function inFlight(retryAfter: number): DomainError {
  return new DomainError('idempotency_in_flight', 409, 'A request with this Idempotency-Key is still in progress; retry shortly.', { retryAfter }, { 'Retry-After': String(retryAfter) });
}

export function keyMismatch(): DomainError {
  return new ConflictError('idempotency_key_mismatch', 'This Idempotency-Key was used with another request body.');
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface RecordRow {
  request_digest: string;
  state: string;
  response_status: number | null;
  response_body: Record<string, unknown> | null;
  lease_expires_at: Date | null;
}

/**
 * The Layer-1 idempotency store of the mutating routes whose effect is not itself keyed (every
 * route but `POST /v1/runs`, whose run rows carry their key). One record per (tenant, workspace,
 * routed operation, caller key):
 *
 * - the first request claims it (`pending`, leased) with an insert-if-absent, runs, and records
 *   its final answer (`completed` for 2xx, `terminal-failure` for a non-retryable 4xx);
 * - a duplicate with the same digest answers the recorded final answer, flagged `replayed`; with
 *   another digest it is `409 idempotency_key_mismatch`; while the first is still `pending` it waits
 *   up to the ack timeout, then `409 idempotency_in_flight` with `Retry-After`;
 * - a retryable outcome (429, 5xx, an unexpected error) is recorded `retryable-failure` and never
 *   replayed: the next request with the key re-executes; 400 `validation_error`, 401 and 403 are not
 *   recorded at all; an expired lease (a crashed owner) and an expired record are reclaimed by the
 *   same compare-and-set insert.
 */
@Injectable()
export class IdempotencyStore {
  constructor(private readonly ds: DataSource) {}

  async execute<T extends Record<string, unknown>>(
    scope: TenantScope,
    endpoint: string,
    key: string | undefined,
    request: unknown,
    perform: () => Promise<{ status: number; body: T }>,
  ): Promise<IdempotentAnswer<T>> {
    if (key === undefined) return { ...(await perform()), replayed: false };
    checkIdempotencyKey(key);
    const ids = [scope.tenant, scope.workspace ?? '', endpoint, key];
    const digest = requestDigest(request);
    const owner = randomUUID();
    const deadline = Date.now() + IDEMPOTENCY_ACK_TIMEOUT_SEC * 1000;
    for (;;) {
      const won = (await this.ds.query(
        `INSERT INTO "idempotency_record" AS r ("tenant", "workspace_key", "endpoint", "idempotency_key", "request_digest", "state", "lease_owner", "lease_expires_at", "expires_at")
         VALUES ($1, $2, $3, $4, $5, 'pending', $6, now() + make_interval(secs => $7), now() + make_interval(secs => $8))
         ON CONFLICT ("tenant", "workspace_key", "endpoint", "idempotency_key") DO UPDATE
           SET "request_digest" = EXCLUDED."request_digest", "state" = 'pending', "lease_owner" = EXCLUDED."lease_owner", "lease_expires_at" = EXCLUDED."lease_expires_at",
               "response_status" = NULL, "response_body" = NULL, "created_at" = now(), "expires_at" = EXCLUDED."expires_at"
           WHERE r."expires_at" < now()
              OR (r."request_digest" = EXCLUDED."request_digest" AND (r."state" = 'retryable-failure' OR (r."state" = 'pending' AND r."lease_expires_at" < now())))
         RETURNING "lease_owner"`,
        [...ids, digest, owner, IDEMPOTENCY_ACK_TIMEOUT_SEC * 6, IDEMPOTENCY_RETENTION_SEC],
      )) as Array<{ lease_owner: string }>;
      if (won.length) return this.performClaimed(ids, owner, perform);
      const [row] = (await this.ds.query(
        `SELECT "request_digest", "state", "response_status", "response_body", "lease_expires_at" FROM "idempotency_record"
         WHERE "tenant" = $1 AND "workspace_key" = $2 AND "endpoint" = $3 AND "idempotency_key" = $4`,
        ids,
      )) as RecordRow[];
      if (!row) continue; // deleted in between (a 400/401/403 outcome): claim again
      if (row.request_digest !== digest) throw keyMismatch();
      if (row.state === 'completed') return { status: row.response_status ?? 200, body: (row.response_body ?? {}) as T, replayed: true };
      if (row.state === 'terminal-failure') {
        const b = row.response_body ?? {};
        throw new DomainError(String(b.error ?? 'conflict'), row.response_status ?? 409, String(b.message ?? ''), b.details as Record<string, unknown> | undefined, { [REPLAY_HEADER]: 'true' });
      }
      // pending (or a retryable failure another request is about to reclaim): wait for it.
      if (Date.now() >= deadline) {
        const left = row.lease_expires_at ? Math.ceil((new Date(row.lease_expires_at).getTime() - Date.now()) / 1000) : 1;
        throw inFlight(Math.max(1, Math.min(left, IDEMPOTENCY_ACK_TIMEOUT_SEC)));
      }
      await sleep(50);
    }
  }

  private async performClaimed<T extends Record<string, unknown>>(ids: string[], owner: string, perform: () => Promise<{ status: number; body: T }>): Promise<IdempotentAnswer<T>> {
    const settle = (state: string, status: number | null, body: unknown) =>
      this.ds.query(
        `UPDATE "idempotency_record" SET "state" = $6, "response_status" = $7, "response_body" = $8::jsonb, "lease_owner" = NULL, "lease_expires_at" = NULL
         WHERE "tenant" = $1 AND "workspace_key" = $2 AND "endpoint" = $3 AND "idempotency_key" = $4 AND "lease_owner" = $5`,
        [...ids, owner, state, status, body === null ? null : JSON.stringify(body)],
      );
    let answer: { status: number; body: T };
    try {
      answer = await perform();
    } catch (e) {
      const status = e instanceof DomainError ? e.status : 500;
      if ((status === 400 && (e as DomainError).code === 'validation_error') || status === 401 || status === 403) {
        // Not idempotent retries to begin with (rule 5): forget the key.
        await this.ds.query(`DELETE FROM "idempotency_record" WHERE "tenant" = $1 AND "workspace_key" = $2 AND "endpoint" = $3 AND "idempotency_key" = $4 AND "lease_owner" = $5`, [...ids, owner]).catch(() => undefined);
      } else if (status >= 400 && status < 500 && status !== 429 && status !== 408) {
        const d = e as DomainError;
        await settle('terminal-failure', status, { error: d.code, message: d.message, ...(d.details ? { details: d.details } : {}) }).catch(() => undefined);
      } else {
        await settle('retryable-failure', status, null).catch(() => undefined);
      }
      throw e;
    }
    await settle('completed', answer.status, answer.body);
    return { ...answer, replayed: false };
  }
}
