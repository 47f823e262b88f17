import { Injectable, OnModuleInit } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { deletedCount, RetentionService, RunKeeper, RunRef, RunRetentionOwner } from '../../platform/retention/retention.service';

/**
 * The runs capability's part of retention (docs/operations.md §Retention): it owns the `run` and
 * `run_node` rows, so it claims the expired runs (terminal, finished more than the retention ago,
 * kept by no keeper, oldest first, FOR UPDATE SKIP LOCKED so a run a request holds waits for the
 * next sweep), deletes their node rows as a purger and, last, the run rows.
 */
@Injectable()
export class RunRetention implements OnModuleInit, RunRetentionOwner {
  constructor(private readonly retention: RetentionService) {}

  onModuleInit(): void {
    this.retention.registerRunOwner(this);
    this.retention.registerRunPurger({ counts: 'runNodes', purge: async (m, runs) => ({ deleted: deletedCount(await m.query(`DELETE FROM "run_node" WHERE "run_id" = ANY($1::uuid[])`, [runs.map((r) => r.id)])) }) });
  }

  async claimExpired(m: EntityManager, opts: { olderThanDays: number; limit: number; keep: RunKeeper[] }): Promise<RunRef[]> {
    const ref = { tenant: 'r."tenant"', id: 'r."id"' };
    const kept = opts.keep.map((k) => `\n           AND NOT (${k.keeps(ref)})`).join('');
    return (await m.query(
      `SELECT r."id", r."tenant" FROM "run" r
         WHERE r."status" IN ('completed', 'failed', 'cancelled')
           AND coalesce(r."completed_at", r."created_at") < now() - make_interval(days => $1)${kept}
         ORDER BY coalesce(r."completed_at", r."created_at")
         LIMIT $2
         FOR UPDATE OF r SKIP LOCKED`,
      [opts.olderThanDays, opts.limit],
    )) as RunRef[];
  }

  async deleteRuns(m: EntityManager, runs: RunRef[]): Promise<number> {
    return deletedCount(await m.query(`DELETE FROM "run" WHERE "id" = ANY($1::uuid[])`, [runs.map((r) => r.id)]));
  }
}
