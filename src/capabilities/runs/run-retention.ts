import { Injectable, OnModuleInit } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { ForceExpireRefusal, ForceExpireService, RunExpiryClaimer } from '../../platform/retention/force-expire.service';
import { RetentionService, RunKeeper, RunRef, RunRetentionOwner } from '../../platform/retention/retention.service';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const TERMINAL = new Set(['completed', 'failed', 'cancelled']);
const FINISH = `coalesce(r."completed_at", r."created_at")`;
/**
 * Up to $2 runs finished more than $1 days ago after the keyset ($3 finish time, $4 id), oldest first: the
 * head of run_expiry_idx from the keyset on, with each row's address (ctid), so the claim and the deletion
 * reach the rows without a probe of the primary key each (the ids are random: a probe per run is a random
 * read of a large index). The finish time travels as text, to the microsecond: a keyset at the millisecond
 * of a JS Date would read the tie again.
 */
export const EXPIRED_PAGE_SQL = `SELECT r."id", ${FINISH} AS "at", r.ctid AS "row" FROM "run" r
  WHERE r."status" IN ('completed', 'failed', 'cancelled') AND ${FINISH} < now() - make_interval(days => $1)
    AND (${FINISH}, r."id") > ($3::timestamptz, $4::uuid)
  ORDER BY ${FINISH}, r."id" LIMIT $2`;

/** The keepers' conditions over the run `r`, each one more `AND NOT (...)`. */
function unkept(keep: readonly RunKeeper[]): string {
  const ref = { tenant: 'r."tenant"', id: 'r."id"' };
  return keep.map((k) => `\n     AND NOT (${k.keeps(ref)})`).join('');
}

/** Of the runs $1, locks up to $2 that are still terminal and that no keeper keeps, skipping runs another transaction holds (the force-expire seam's claim of one run). */
export function lockUnkeptSql(keep: RunKeeper[]): string {
  return `SELECT r."id", r."tenant" FROM "run" r
   WHERE r."id" = ANY($1::uuid[]) AND r."status" IN ('completed', 'failed', 'cancelled')${unkept(keep)}
   LIMIT $2 FOR UPDATE OF r SKIP LOCKED`;
}

/**
 * The runs capability's part of retention (docs/operations.md §Retention): it owns the `run` and
 * `run_node` rows, so it gives the batch statement its claim of the expired runs (a page of
 * run_expiry_idx after the sweep's keyset; of it the runs still terminal and kept by no keeper, each
 * keeper probed per run over its own index, locked FOR UPDATE SKIP LOCKED so a run a request holds
 * waits for the next sweep), the deletion of their node rows as a purger and that of the run rows.
 * A batch costs the runs it deletes and the kept runs it passes, never a scan or sort of the whole
 * table; a sweep passes each kept run once.
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
    // The ids as one array: an index scan probing them in order, whatever the statistics say.
    this.retention.registerRunPurger({ counts: 'runNodes', deletes: (runs) => `DELETE FROM "run_node" n WHERE n."run_id" = ANY (ARRAY(SELECT d."id" FROM ${runs} d)) RETURNING 1` });
  }

  expiredPage(): string {
    return EXPIRED_PAGE_SQL;
  }

  /**
   * The page's rows by their addresses, given as one array: a TID scan whatever the statistics say (a join let the
   * planner read a young table whole). The statement's snapshot shows at each address the row the page read there; a
   * row an update moved meanwhile is not locked (the lock rechecks the address on the newest version) and waits for
   * the next sweep; a locked row cannot move, so the deletion finds it there.
   */
  claim(page: string, keep: readonly RunKeeper[]): string {
    return `SELECT r."tenant", r."id", r.ctid AS "row" FROM "run" r
   WHERE r.ctid = ANY (ARRAY(SELECT p."row" FROM ${page} p)) AND r."status" IN ('completed', 'failed', 'cancelled')${unkept(keep)}
   FOR UPDATE OF r SKIP LOCKED`;
  }

  locked(): string {
    return `SELECT r."tenant", r."id", r.ctid AS "row" FROM "run" r WHERE r."id" = ANY($1::uuid[])`;
  }

  deleteRuns(runs: string): string {
    return `DELETE FROM "run" r WHERE r.ctid = ANY (ARRAY(SELECT d."row" FROM ${runs} d)) RETURNING 1`;
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
}
