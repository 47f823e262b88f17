/**
 * Lists in O(page): every list and poll route's statements, captured as the host really sends them
 * (every query of the driver's clients made inside the request, TypeORM's and the event log's prepared
 * statements alike; the routes called over HTTP), are EXPLAINed on a database
 * seeded large enough for the planner to prefer its indexes. A plan that reads a big table with a
 * sequential scan, or sorts rows of it (the page's order must come from an index ending in the
 * primary key, so keyset order is total and a tie group of equal timestamps is never sorted), fails
 * and prints the plan. The index each statement uses is snapshotted, so a plan change shows in review.
 */
import { randomUUID } from 'node:crypto';
import { IN_FLIGHT, IN_FLIGHT_SQL } from '../../src/capabilities/runs/run-admission';
import { RetentionService } from '../../src/platform/retention/retention.service';
import { StatementCapture } from '../support/statement-capture';
import { createTestApp, TestApp } from '../support/test-app';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** The tables that grow with a tenant's history: a plan may read them only through an index. */
const BIG = new Set(['run', 'event', 'event_stream', 'approval', 'goal', 'goal_run', 'proposal', 'webhook_delivery', 'api_key']);
const SORTS = new Set(['Sort', 'Incremental Sort']);
const TENANTS = 20;
const T = 't00';

interface Captured {
  sql: string;
  params: unknown[];
}

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Sort Key'?: string[];
  'Subplan Name'?: string;
  'CTE Name'?: string;
  'Rows Removed by Filter'?: number;
  'Actual Loops'?: number;
  Plans?: PlanNode[];
}

function walk(n: PlanNode, out: PlanNode[] = []): PlanNode[] {
  out.push(n);
  for (const c of n.Plans ?? []) walk(c, out);
  return out;
}

describe('list and poll statements use indexes on a seeded database', () => {
  let t: TestApp;
  let token: string;
  /** The statements of the request in flight (read in the driver, in the request's async context). */
  const capture = new StatementCapture();
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    t = await createTestApp();
    capture.install();
    token = await t.key({ tenant: T, principal: 'lister', scopes: ['runs:read', 'approvals:respond', 'proposals:read', 'goals:read', 'connections:read', 'webhooks:read', 'tools:read', 'tools:manage', 'keys:manage'] });
    const started = Date.now();
    await seed();
    // eslint-disable-next-line no-console
    console.log(`seeded in ${Date.now() - started} ms`);
  }, 120_000);
  afterAll(async () => {
    capture.restore();
    await t?.close();
  });

  const tenantOf = (expr: string) => `'t' || lpad((${expr} % ${TENANTS})::text, 2, '0')`;

  /** The rows the host writes, in bulk: runs in tie groups of 50 (one statement, one now()), mostly finished. */
  async function seed(): Promise<void> {
    const q = (sql: string, p: unknown[] = []) => t.ds.query(sql, p);
    await q(`INSERT INTO "run" ("tenant", "workspace_key", "principal", "kind", "status", "metadata", "created_at", "workflow_id", "definition_key", "started_at", "completed_at")
      SELECT ${tenantOf('i')}, '', 'alice', 'workflow',
        CASE WHEN (i / ${TENANTS}) % 97 = 0 THEN 'waiting-approval' WHEN i % 13 = 0 THEN 'failed' ELSE 'completed' END,
        '{}', now() - ((i / 1000) * interval '1 second'), CASE WHEN i % 7 = 0 THEN 'vendor.acme.audit' ELSE 'vendor.acme.ship' END, run_definition_ref(${tenantOf('i')}, '{"nodes":[{"id":"a","typeId":"core.noop"}],"edges":[]}'),
        now() - ((i / 1000) * interval '1 second'), now() - ((i / 1000) * interval '1 second') + interval '20 ms'
      FROM generate_series(1, 50000) AS i`);
    // Events of a few thousand of the tenant's runs: the streams and the per-run log.
    await q(`CREATE TEMP TABLE seeded_runs AS SELECT "id", "tenant", "created_at" FROM "run" WHERE "tenant" = $1 ORDER BY "created_at" DESC LIMIT 2000`, [T]);
    // In the order the host writes them: a stream's key is drawn at its first event, so the heap is in key order.
    await q(`INSERT INTO "event_stream" ("tenant", "stream_id", "last_sequence") SELECT "tenant", "id"::text, 10 FROM seeded_runs ORDER BY "created_at"`);
    await q(`INSERT INTO "event" ("stream_key", "tenant", "sequence", "type", "payload", "node_id", "created_at")
      SELECT st."key", r."tenant", s, CASE s WHEN 1 THEN 'run.started' WHEN 10 THEN 'run.completed' ELSE 'node.completed' END, '{"x":1}', CASE WHEN s BETWEEN 2 AND 9 THEN 'a' END, r."created_at"
      FROM seeded_runs r JOIN "event_stream" st ON st."tenant" = r."tenant" AND st."stream_id" = r."id"::text CROSS JOIN generate_series(1, 10) AS s ORDER BY st."key", s`);
    await q(`INSERT INTO "approval" ("tenant", "subject_kind", "subject_id", "state", "required_scope", "quorum", "artifact_ref", "requested_by", "expires_at", "created_at", "updated_at", "decided_at")
      SELECT ${tenantOf('i')}, 'proposal', gen_random_uuid(), CASE WHEN (i / ${TENANTS}) % 97 = 0 THEN 'pending' ELSE 'granted' END, 'approvals:respond', 1, 'sha256:00', 'alice',
        now() + interval '1 day', now() - ((i / 1000) * interval '1 second'), now(), CASE WHEN (i / ${TENANTS}) % 97 = 0 THEN NULL ELSE now() END
      FROM generate_series(1, 40000) AS i`);
    await q(`INSERT INTO "goal" ("tenant", "objective", "state", "judge", "continuation_mode", "bounds", "created_at", "updated_at")
      SELECT ${tenantOf('i')}, 'keep it green', CASE WHEN (i / ${TENANTS}) % 97 = 0 THEN 'active' ELSE 'satisfied' END, 'host', 'manual', '{}', now() - ((i / 1000) * interval '1 second'), now()
      FROM generate_series(1, 20000) AS i`);
    ids.goal = ((await q(`SELECT "id" FROM "goal" WHERE "tenant" = $1 ORDER BY "created_at" DESC LIMIT 1`, [T])) as Array<{ id: string }>)[0].id;
    await q(`INSERT INTO "goal_run" ("tenant", "goal_id", "run_id", "ordinal", "status", "recorded_at")
      SELECT g."tenant", g."id", 'run-' || g."id" || '-' || s, s, 'completed', now() FROM "goal" g CROSS JOIN generate_series(1, 3) AS s`);
    await q(`INSERT INTO "goal_run" ("tenant", "goal_id", "run_id", "ordinal", "status", "recorded_at")
      SELECT $1, $2, 'run-' || lpad(s::text, 6, '0'), s, 'completed', now() FROM generate_series(4, 20000) AS s`, [T, ids.goal]);
    await q(`INSERT INTO "proposal" ("tenant", "kind", "state", "artifact_bytes", "artifact_ref", "created_at", "updated_at")
      SELECT ${tenantOf('i')}, 'automation', CASE WHEN (i / ${TENANTS}) % 97 = 0 THEN 'draft' ELSE 'rejected' END, '{}', 'sha256:' || i, now() - ((i / 1000) * interval '1 second'), now()
      FROM generate_series(1, 20000) AS i`);
    ids.webhook = `wh-${randomUUID()}`;
    await q(`INSERT INTO "webhook_subscription" ("id", "tenant", "principal", "url", "events", "secret_ref", "secret_fingerprint") VALUES ($1, $2, 'lister', 'https://example.com/hook', '{run.completed}', gen_random_uuid(), 'fp')`, [ids.webhook, T]);
    await q(`INSERT INTO "webhook_delivery" ("tenant", "webhook_id", "event_id", "run_id", "sequence", "event_type", "status", "attempts", "next_attempt_at", "delivered_at", "created_at", "updated_at")
      SELECT $1, $2, gen_random_uuid(), 'r' || i, 10, 'run.completed', CASE WHEN i % 401 = 0 THEN 'failed' ELSE 'delivered' END, 1, now(), now(), now() - ((i / 1000) * interval '1 second'), now()
      FROM generate_series(1, 20000) AS i`, [T, ids.webhook]);
    await q(`INSERT INTO "api_key" ("tenant", "principal", "lookup_id", "secret_hash", "scopes", "created_at")
      SELECT ${tenantOf('i')}, 'p' || i, 'seed' || i, 'x', '{runs:read}', now() - ((i / 1000) * interval '1 second') FROM generate_series(1, 20000) AS i`);
    ids.run = ((await q(`SELECT "id" FROM seeded_runs ORDER BY "created_at" DESC LIMIT 1`)) as Array<{ id: string }>)[0].id;
    await q('ANALYZE');
  }

  /** Calls a route and returns its body and the SELECT statements it sent. */
  async function call(url: string, headers: Record<string, string> = {}): Promise<{ body: Json; statements: Captured[] }> {
    const { result: res, statements: sent } = await capture.during(() => t.http('GET', url, { token, headers }));
    const statements: Captured[] = sent.filter((s) => /^\s*(SELECT|WITH)\b/i.test(s.text)).map((s) => ({ sql: s.text, params: s.params }));
    if (res.status !== 200) throw new Error(`${url}: ${res.status} ${res.text}`);
    return { body: res.body as Json, statements };
  }

  /**
   * EXPLAINs each statement; returns the index names used on big tables, and the violations with their plans.
   * `removable`: the statements (reads only) are also run (EXPLAIN ANALYZE), and a scan of a big table may
   * drop at most this many rows by a filter: a page is read from an index range that holds it, not found
   * among the rows of a wider one (a filter the index does not cover, read row by row from the table).
   */
  async function plansOf(statements: Captured[], removable?: number): Promise<{ indexes: string[]; problems: string[] }> {
    const indexes: string[] = [];
    const problems: string[] = [];
    for (const s of statements) {
      const [{ 'QUERY PLAN': plan }] = (await t.ds.query(`EXPLAIN (${removable === undefined ? '' : 'ANALYZE, '}FORMAT JSON) ${s.sql}`, s.params)) as Array<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>;
      const nodes = walk(plan[0].Plan);
      const bigScans = nodes.filter((n) => n['Relation Name'] && BIG.has(n['Relation Name']));
      if (!bigScans.length) continue;
      // The credential's lookup is checked like every statement but left out of the snapshot: a replica whose
      // notifications arrive caches verified keys, one without (the embedded engine) looks the key up on every request.
      for (const n of bigScans) if (n['Index Name'] && n['Index Name'] !== 'api_key_lookup_uq') indexes.push(`${n['Relation Name']}.${n['Index Name']}`);
      // A sort is allowed only over what a Limit already bounded: beneath it (a page read in index order, put in the
      // answer's order), or in the CTE it reads (a retention batch's page, sorted for its cursor; PostgreSQL 16 and
      // later plan an ordered aggregate as a Sort node where 15 sorts inside the aggregate).
      const bounded = new Set(nodes.filter((n) => n['Subplan Name']?.startsWith('CTE ') && walk(n).some((c) => c['Node Type'] === 'Limit')).map((n) => n['Subplan Name']!.slice(4)));
      const boundedSort = (n: PlanNode) => {
        const below = walk(n);
        if (below.some((c) => c['Node Type'] === 'Limit')) return true;
        const leaves = below.filter((c) => !c.Plans?.length);
        return leaves.length > 0 && leaves.every((c) => c['Node Type'] === 'CTE Scan' && bounded.has(c['CTE Name'] ?? ''));
      };
      // An ordered aggregate's own sort (json_agg(... ORDER BY ...) of one run's child runs or artifacts, read
      // through an index): PostgreSQL 15 sorts inside the aggregate, 16 and later plan it as a Sort node beneath it.
      const aggregateSorts = new Set(nodes.filter((n) => n['Node Type'] === 'Aggregate').flatMap((n) => (n.Plans ?? []).filter((c) => SORTS.has(c['Node Type']))));
      const bad = nodes.filter((n) => (n['Node Type'] === 'Seq Scan' && BIG.has(n['Relation Name'] ?? '')) || (SORTS.has(n['Node Type']) && !aggregateSorts.has(n) && !boundedSort(n)));
      const removed = bigScans.reduce((sum, n) => sum + (n['Rows Removed by Filter'] ?? 0) * (n['Actual Loops'] ?? 1), 0);
      if (removable !== undefined && removed > removable) bad.push({ 'Node Type': `${removed} rows removed by a filter (at most ${removable})` });
      if (bad.length) problems.push(`${bad.map((n) => `${n['Node Type']} ${n['Relation Name'] ?? n['Sort Key']?.join(', ') ?? ''}`).join('; ')}\n  ${s.sql}\n  ${JSON.stringify(s.params)}\n${JSON.stringify(plan[0].Plan, null, 1)}`);
    }
    return { indexes: [...new Set(indexes)].sort(), problems };
  }

  /** A route's first page and, when it has one, its second (the keyset condition). */
  async function pages(url: string): Promise<Captured[]> {
    const first = await call(url);
    const next = first.body.nextCursor as string | null | undefined;
    if (!next) throw new Error(`${url}: the seeded list should have a second page`);
    const second = await call(`${url}${url.includes('?') ? '&' : '?'}cursor=${encodeURIComponent(next)}`);
    return [...first.statements, ...second.statements];
  }

  const LISTS: Array<[string, () => string]> = [
    ['runs', () => '/v1/runs?limit=50'],
    ['runs by a rare status', () => '/v1/runs?limit=3&status=waiting-approval'],
    ['runs by a common status', () => '/v1/runs?limit=50&status=failed'],
    ['completed runs', () => '/v1/runs?limit=50&status=completed'],
    ['runs of a workflow', () => '/v1/runs?limit=50&workflowId=vendor.acme.audit'],
    ['runs of a workflow by a rare status', () => '/v1/runs?limit=3&workflowId=vendor.acme.ship&status=waiting-approval'],
    ['runs of a workflow by a common status', () => '/v1/runs?limit=10&workflowId=vendor.acme.audit&status=failed'],
    ['completed runs of a workflow', () => '/v1/runs?limit=50&workflowId=vendor.acme.audit&status=completed'],
    ['approvals', () => '/v1/approvals?limit=50'],
    ['approvals by a rare state', () => '/v1/approvals?limit=3&state=pending'],
    ['proposals', () => '/v1/proposals?limit=50'],
    ['proposals by a rare state', () => '/v1/proposals?limit=3&state=draft'],
    ['goals', () => '/v1/goals?limit=50'],
    ['goals by a rare state', () => '/v1/goals?limit=3&state=active'],
    ['goal runs', () => `/v1/goals/${ids.goal}/runs?limit=50`],
    ['webhook deliveries', () => `/v1/webhooks/${ids.webhook}/deliveries?limit=50`],
    ['keys', () => '/v1/keys?limit=50'],
    ['webhook deliveries by a rare status', () => `/v1/webhooks/${ids.webhook}/deliveries?limit=3&status=failed`],
  ];

  const chosen: Record<string, string[]> = {};

  const listReadsOnlyThePage = async (name: string, url: () => string) => {
    // At most a page's worth of rows of the index range may be dropped by the filters (completed runs of a
    // workflow: the workflow's few others are read and dropped).
    const limit = Number(/[?&]limit=(\d+)/.exec(url())?.[1] ?? 50);
    const { indexes, problems } = await plansOf(await pages(url()), limit);
    chosen[name] = indexes;
    if (problems.length) throw new Error(`${name}: ${problems.length} statement(s) without an index-ordered plan:\n${problems.join('\n\n')}`);
    expect(indexes.length).toBeGreaterThan(0);
  };
  it.each(LISTS)('%s: first and next page read only the page', listReadsOnlyThePage);

  it.each([
    ['events poll', () => `/v1/runs/${ids.run}/events/poll?lastSequence=3&timeout=0`, {}],
    ['events JSON read', () => `/v1/runs/${ids.run}/events`, { accept: 'application/json' }],
    ['run snapshot', () => `/v1/runs/${ids.run}`, {}],
    ['webhooks', () => '/v1/webhooks?limit=50', {}],
    ['connections', () => '/v1/connections?limit=50', {}],
    ['installed packs', () => '/v1/installed-packs?limit=50', {}],
    ['MCP tool pins', () => '/v1/mcp/tool-pins', {}],
  ] as Array<[string, () => string, Record<string, string>]>)('%s reads only what it answers', async (name, url, headers) => {
    const { statements } = await call(url(), headers);
    const { indexes, problems } = await plansOf(statements);
    chosen[name] = indexes;
    if (problems.length) throw new Error(`${name}: ${problems.length} statement(s) without an index-ordered plan:\n${problems.join('\n\n')}`);
  });

  it('the backpressure count of runs in flight reads an index of unfinished runs only', async () => {
    await t.ds.query(`INSERT INTO "run" ("tenant", "workspace_key", "principal", "kind", "status", "metadata", "workflow_id") SELECT $1, '', 'alice', 'workflow', 'pending', '{}', 'vendor.acme.ship' FROM generate_series(1, 5)`, [T]);
    const { indexes, problems } = await plansOf([{ sql: IN_FLIGHT_SQL, params: [T, IN_FLIGHT, 100] }], 0);
    if (problems.length) throw new Error(`in-flight count: ${problems.join('\n\n')}`);
    // Any index whose predicate leaves completed runs out: a tenant's history is never read to count what is in flight.
    expect(indexes.length).toBeGreaterThan(0);
    for (const i of indexes) expect(['run.run_claimable_idx', 'run.run_claim_tenant_idx', 'run.run_tenant_status_not_completed_idx']).toContain(i);
    await t.ds.query(`DELETE FROM "run" WHERE "tenant" = $1 AND "status" = 'pending'`, [T]);
  });

  it('a retention batch reads the head of the expiry index, its keepers probed per picked run, and deletes each table by index', async () => {
    // Every seeded run finished within the last minute: with a window of 0 days all 50,000 are expired.
    const retention = t.app.get(RetentionService);
    const keep = [...retention.runKeepers()];
    expect(keep.map((k) => k.name).sort()).toEqual(['active goal iteration', 'compensation', 'pending approval gate']);
    // The batch is one statement; EXPLAIN (without ANALYZE) plans it without running its deletions. A page of 100:
    // the seeded tables are small (2,000 event streams), and a batch here should be as far below them as the
    // sweep's batches (at most 10,000 runs) are below a grown database's tables, where a probe per run beats a scan.
    const sql = retention.batchSql();
    // Every run has its stream row, as in a database the host wrote (the seed gave 2,000 of them events and streams).
    await t.ds.query(`INSERT INTO "event_stream" ("tenant", "stream_id", "last_sequence") SELECT "tenant", "id"::text, 1 FROM "run" ON CONFLICT DO NOTHING`);
    await t.ds.query('ANALYZE "event_stream"');
    const first: Captured = { sql, params: [0, 100, '-infinity', '00000000-0000-0000-0000-000000000000'] };
    const next: Captured = { sql, params: [0, 100, new Date(Date.now() - 30_000).toISOString(), randomUUID()] };
    const { indexes, problems } = await plansOf([first, next]);
    if (problems.length) throw new Error(`retention: ${problems.join('\n\n')}`);
    expect(indexes).toEqual(expect.arrayContaining(['run.run_expiry_idx', 'approval.approval_run_node_idx', 'approval.approval_subject_idx', 'event.event_stream_seq_uq']));
    // The run table only through its expiry index, then by the addresses the page read (TID scans: the claim's lock
    // and the deletion); the stream rows by their (tenant, stream id) key, the events by the streams' keys.
    expect(indexes.filter((i) => i.startsWith('run.'))).toEqual(['run.run_expiry_idx']);
    const streamPk = `event_stream.${(await t.ds.query(`SELECT conname FROM pg_constraint WHERE conrelid = 'event_stream'::regclass AND contype = 'p'`))[0].conname}`;
    expect(indexes.filter((i) => i.startsWith('event_stream.'))).toEqual([streamPk]);
  });

  it('the chosen indexes are the reviewed ones', () => {
    expect(Object.keys(chosen).length).toBe(LISTS.length + 7);
    expect(Object.fromEntries(Object.entries(chosen).sort(([a], [b]) => (a < b ? -1 : 1)))).toMatchSnapshot();
  });
});
