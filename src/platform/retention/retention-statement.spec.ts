import { batchStatement, BATCH_RUNS, nextBatchSize, RETENTION_BATCH_MAX, RETENTION_BATCH_MIN } from './retention-statement';

describe('retention batch statement', () => {
  const parts = [
    { deletes: (runs: string) => `DELETE FROM "a" x USING ${runs} d WHERE x."run_id" = d."id" RETURNING 1` },
    { deletes: (runs: string) => `DELETE FROM "b" x USING ${runs} d WHERE x."run_id" = d."id" RETURNING x."ref"`, afterCommit: { rows: `"ref"` } },
  ];
  const deleteRuns = (runs: string) => `DELETE FROM "run" r USING ${runs} d WHERE r."id" = d."id" RETURNING 1`;

  it('chains the claim, every part and the run rows into one statement that answers each count', () => {
    const sql = batchStatement({ page: 'SELECT 1 AS "id", now() AS "at"', claim: (page) => `SELECT 't' AS "tenant", "id" FROM ${page}` }, parts, deleteRuns, false);
    expect(sql.match(/^WITH /g)).toHaveLength(1);
    expect(sql).toContain(`${BATCH_RUNS} AS MATERIALIZED (SELECT 't' AS "tenant", "id" FROM retention_page)`);
    for (const part of [...parts.map((p) => p.deletes(BATCH_RUNS)), deleteRuns(BATCH_RUNS)]) expect(sql).toContain(part);
    for (const out of ['"candidates"', '"after"', '"runs"', '"events"', '"eventStreams"', '"activityInvocations"', '"p0"', '"p1"', '"a1"']) expect(sql).toContain(`AS ${out}`);
    expect(sql).not.toContain('"a0"');
    expect(sql).not.toContain('"refs"');
  });

  it('reads runs the caller locked already from the given part, and answers the runs when asked', () => {
    const sql = batchStatement({ given: 'SELECT "tenant", "id" FROM "run" WHERE "id" = ANY($1::uuid[])' }, parts, deleteRuns, true);
    expect(sql).toContain(`${BATCH_RUNS} AS MATERIALIZED (SELECT "tenant", "id" FROM "run" WHERE "id" = ANY($1::uuid[]))`);
    expect(sql).not.toContain('retention_page');
    expect(sql).toContain('AS "refs"');
  });

  it('sizes the next batch from the last one\'s time, at most ×4 or ÷4 at a time, within its bounds', () => {
    expect(nextBatchSize(500, 100, 200)).toBe(1000);
    expect(nextBatchSize(500, 10, 200)).toBe(2000);
    expect(nextBatchSize(4000, 800, 200)).toBe(1000);
    expect(nextBatchSize(4000, 10_000, 200)).toBe(1000);
    expect(nextBatchSize(5000, 1, 200)).toBe(RETENTION_BATCH_MAX);
    expect(nextBatchSize(150, 1000, 200)).toBe(RETENTION_BATCH_MIN);
  });
});
