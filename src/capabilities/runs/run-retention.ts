import { Injectable, OnModuleInit } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { ForceExpireRefusal, ForceExpireService, RunExpiryClaimer } from '../../platform/retention/force-expire.service';
import { deletedCount, RetentionService, RunKeeper, RunRef, RunRetentionOwner } from '../../platform/retention/retention.service';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const TERMINAL = new Set(['completed', 'failed', 'cancelled']);
/** Pages of expired runs one batch reads at most (kept runs at the head of the index are passed page by page). */
const MAX_PAGES = 50;
// The finish time travels as text, to the microsecond: a keyset at the millisecond of a JS Date would read the tie again.
const EXPIRED = `SELECT r."id", coalesce(r."completed_at", r."created_at")::text AS "at" FROM "run" r
  WHERE r."status" IN ('completed', 'failed', 'cancelled') AND coalesce(r."completed_at", r."created_at") < now() - make_interval(days => $1)`;
const PAGE = `ORDER BY coalesce(r."completed_at", r."created_at"), r."id" LIMIT $2`;
/** The first page of expired runs, oldest first (the head of run_expiry_idx). */
export const EXPIRED_SQL = `${EXPIRED} ${PAGE}`;
/** The next page, after the keyset ($3 finish time, $4 id) of the last one. */
export const EXPIRED_AFTER_SQL = `${EXPIRED} AND (coalesce(r."completed_at", r."created_at"), r."id") > ($3::timestamptz, $4::uuid) ${PAGE}`;

/** Of the runs $1 (a page), locks up to $2 that are still terminal and that no keeper keeps, skipping runs another transaction holds (a run left out is the head of the next batch). */
export function lockUnkeptSql(keep: RunKeeper[]): string {
  const ref = { tenant: 'r."tenant"', id: 'r."id"' };
  const kept = keep.map((k) => `\n     AND NOT (${k.keeps(ref)})`).join('');
  return `SELECT r."id", r."tenant" FROM "run" r
   WHERE r."id" = ANY($1::uuid[]) AND r."status" IN ('completed', 'failed', 'cancelled')${kept}
   LIMIT $2 FOR UPDATE OF r SKIP LOCKED`;
}

/**
 * The runs capability's part of retention (docs/operations.md §Retention): it owns the `run` and
 * `run_node` rows, so it claims the expired runs (terminal, finished more than the retention ago,
 * kept by no keeper, oldest first, read in pages of run_expiry_idx, FOR UPDATE SKIP LOCKED so a run a request holds waits for the
 * next sweep), deletes their node rows as a purger and, last, the run rows.
 */
@Injectable()
export class RunRetention implements OnModuleInit, RunRetentionOwner, RunExpiryClaimer {
  constructor(
    private readonly retention: RetentionService,
    private readonly forceExpire: ForceExpireService,
  ) {}

  onModuleInit(): void {
    this.retention.registerRunOwner(this);
    this.forceExpire.registerRunClaimer(this);
    this.retention.registerRunPurger({ counts: 'runNodes', purge: async (m, runs) => ({ deleted: deletedCount(await m.query(`DELETE FROM "run_node" WHERE "run_id" = ANY($1::uuid[])`, [runs.map((r) => r.id)])) }) });
  }

  /**
   * Reads the expired runs in pages from the head of run_expiry_idx (terminal runs by finish time, a keyset
   * on (finish, id)), then locks, of each page, the runs no keeper keeps (each keeper probed per run over
   * its own index): a batch costs the runs it deletes and the kept runs it passes, never a scan or sort of
   * the whole table. Kept runs stay at the head of the index; at most MAX_PAGES pages are read per batch.
   */
  async claimExpired(m: EntityManager, opts: { olderThanDays: number; limit: number; keep: RunKeeper[] }): Promise<RunRef[]> {
    const out: RunRef[] = [];
    let after: { at: string; id: string } | undefined;
    for (let page = 0; page < MAX_PAGES && out.length < opts.limit; page++) {
      const candidates = (await m.query(after ? EXPIRED_AFTER_SQL : EXPIRED_SQL, after ? [opts.olderThanDays, opts.limit, after.at, after.id] : [opts.olderThanDays, opts.limit])) as Array<{ id: string; at: string }>;
      if (!candidates.length) break;
      after = candidates[candidates.length - 1];
      out.push(...(await m.query(lockUnkeptSql(opts.keep), [candidates.map((c) => c.id), opts.limit - out.length])));
      if (candidates.length < opts.limit) break;
    }
    return out;
  }

  /** One run, whatever its age (the force-expire seam): locked when terminal and kept by no keeper, like a sweep's claim. */
  async claimRun(m: EntityManager, id: string, keep: readonly RunKeeper[]): Promise<RunRef | ForceExpireRefusal> {
    if (!UUID.test(id)) return 'not_found';
    const [row] = (await m.query(`SELECT "status" FROM "run" WHERE "id" = $1`, [id])) as Array<{ status: string }>;
    if (!row) return 'not_found';
    if (!TERMINAL.has(row.status)) return 'not_terminal';
    const [locked] = (await m.query(lockUnkeptSql([...keep]), [[id], 1])) as RunRef[];
    return locked ?? 'kept';
  }

  async deleteRuns(m: EntityManager, runs: RunRef[]): Promise<number> {
    return deletedCount(await m.query(`DELETE FROM "run" WHERE "id" = ANY($1::uuid[])`, [runs.map((r) => r.id)]));
  }
}
