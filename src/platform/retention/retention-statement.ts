/**
 * The retention batch as one statement (docs/operations.md §Retention): the owner's claim of expired
 * runs, every deletion of their rows (the platform's own and each capability's, contributed as SQL
 * through the registration API) and the counts, composed into one chain of data-modifying CTEs. One
 * statement is one transaction on its own: it commits whole or not at all, so a batch never leaves a
 * run half-deleted, and it costs one round trip whatever the number of tables.
 *
 * Every CTE sees the snapshot the statement started with and the claim locks its runs before any
 * deletion reads them, so the order of the deletions does not matter; the events are found through
 * the stream rows the same statement deletes (their keys, from its RETURNING).
 */

/** The relation every deletion reads the batch's runs from: columns "tenant" (text) and "id" (uuid). */
export const BATCH_RUNS = 'retention_doomed';

/** A capability's deletion as a part of the batch's statement (see RunPurger in ./retention.service). */
export interface StatementPart {
  deletes(runs: string): string;
  afterCommit?: { rows: string };
}

/** How the statement finds its runs: the owner's claim of expired ones, or runs the caller already locked. */
export type BatchSource =
  | {
      /**
       * Two CTE bodies over $1 (retention in days), $2 (page size), $3 and $4 (the keyset, finish time as text and
       * id, after which the page starts): `page` the expired runs in keyset order ("id", "at"), `claim` of them the
       * runs to delete, locked ("tenant", "id"); both may carry columns of the owner's own.
       */
      page: string;
      claim(page: string): string;
    }
  | {
      /** A CTE body over $1 (ids, uuid[]): runs the caller's transaction has locked already ("tenant", "id"). */
      given: string;
    };

const PAGE = 'retention_page';
const STREAMS = 'retention_streams';

/**
 * The batch's statement. It answers one row: "candidates" (the runs the page read: fewer than its size
 * means nothing expired is left after the keyset), "after" (the keyset of the page's last run, as two
 * texts, json), "runs", "events", "eventStreams", "activityInvocations", "p<i>" (purger i's count), "a<i>"
 * (purger i's rows for after the commit, json) and, with `refs`, "refs" (the runs, json).
 */
export function batchStatement(source: BatchSource, parts: readonly StatementPart[], deleteRuns: (runs: string) => string, refs: boolean): string {
  const ctes: string[] = [];
  if ('given' in source) {
    ctes.push(`${BATCH_RUNS} AS MATERIALIZED (${source.given})`);
  } else {
    ctes.push(`${PAGE} AS MATERIALIZED (${source.page})`, `${BATCH_RUNS} AS MATERIALIZED (${source.claim(PAGE)})`);
  }
  // The platform's own rows: the stream rows first named, their events by the keys the deletion returns, given as
  // one array: an index scan of event_stream_seq_uq probing the keys in order, whatever the statistics say.
  ctes.push(
    `${STREAMS} AS (DELETE FROM "event_stream" s USING ${BATCH_RUNS} d WHERE s."tenant" = d."tenant" AND s."stream_id" = d."id"::text RETURNING s."key")`,
    `retention_events AS (DELETE FROM "event" e WHERE e."stream_key" = ANY (ARRAY(SELECT s."key" FROM ${STREAMS} s)) RETURNING 1)`,
    `retention_invocations AS (DELETE FROM "activity_invocation" i USING ${BATCH_RUNS} d WHERE i."tenant" = d."tenant" AND i."run_id" = d."id"::text RETURNING 1)`,
  );
  parts.forEach((p, i) => ctes.push(`retention_p${i} AS (${p.deletes(BATCH_RUNS)})`));
  ctes.push(`retention_runs AS (${deleteRuns(BATCH_RUNS)})`);
  const count = (cte: string) => `(SELECT count(*) FROM ${cte})::int`;
  const outputs = [
    'given' in source ? `0 AS "candidates", NULL::json AS "after"` : `${count(PAGE)} AS "candidates", (SELECT json_agg(json_build_array(p."at"::text, p."id") ORDER BY p."at" DESC, p."id" DESC) -> 0 FROM ${PAGE} p) AS "after"`,
    `${count('retention_runs')} AS "runs"`,
    `${count('retention_events')} AS "events"`,
    `${count(STREAMS)} AS "eventStreams"`,
    `${count('retention_invocations')} AS "activityInvocations"`,
    ...parts.map((p, i) => `${count(`retention_p${i}`)} AS "p${i}"`),
    ...parts.flatMap((p, i) => (p.afterCommit ? [`(SELECT json_agg(x."row") FROM (SELECT ${p.afterCommit.rows} AS "row" FROM retention_p${i}) x WHERE x."row" IS NOT NULL) AS "a${i}"`] : [])),
    ...(refs ? [`(SELECT json_agg(json_build_object('tenant', d."tenant", 'id', d."id")) FROM ${BATCH_RUNS} d) AS "refs"`] : []),
  ];
  return `WITH ${ctes.join(',\n')}\nSELECT ${outputs.join(',\n  ')}`;
}

/** Runs a batch asks for at first, and its bounds: each next batch is sized to take about the statement target. */
export const RETENTION_BATCH = 500;
export const RETENTION_BATCH_MIN = 100;
export const RETENTION_BATCH_MAX = 10_000;

/** The next batch's size: scaled by how far the last one's time was from the target, at most ×4 or ÷4 at a time. */
export function nextBatchSize(size: number, tookMs: number, targetMs: number): number {
  const scaled = size * Math.min(4, Math.max(0.25, targetMs / Math.max(1, tookMs)));
  return Math.round(Math.min(RETENTION_BATCH_MAX, Math.max(RETENTION_BATCH_MIN, scaled)));
}
