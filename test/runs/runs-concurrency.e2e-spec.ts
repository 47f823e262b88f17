/**
 * Concurrent clients starting runs, on the test database and on an embedded engine of the host's
 * own (what `npm start` gives a new user): every POST answers 201, every run completes with every
 * node completed, and the host logs no error. The embedded engine has one backend session, so this
 * is where protocol exchanges of several connections would interleave if anything let them.
 */
import { HostProcess, startHostProcess } from '../support/host-process';
import { createTestApp, TestApp } from '../support/test-app';
import { expectSchemaValid, installChains, TestEvent } from './run-kit';

const TOOL = 'x-host-openwop-echo';

/** A chain whose two middle nodes are tool calls running in parallel. */
const PARALLEL_TOOLS = {
  nodes: [
    { id: 'prep', typeId: 'core.noop', config: { word: 'go' } },
    { id: 'left', typeId: 'core.tool', config: { toolId: TOOL, arguments: { message: 'left {{nodes.prep.word}}' } } },
    { id: 'right', typeId: 'core.tool', config: { toolId: TOOL, arguments: { message: 'right {{nodes.prep.word}}' } } },
    { id: 'join', typeId: 'core.noop', config: { done: true } },
  ],
  edges: [{ from: 'prep', to: 'left' }, { from: 'prep', to: 'right' }, { from: 'left', to: 'join' }, { from: 'right', to: 'join' }],
};

/** The same shape without the tool sessions, for the long burst. */
const PARALLEL_NOOPS = {
  nodes: [
    { id: 'prep', typeId: 'core.noop', config: { n: 1 } },
    { id: 'left', typeId: 'core.noop', config: { n: 2 } },
    { id: 'right', typeId: 'core.noop', config: { n: 3 } },
    { id: 'join', typeId: 'core.noop', config: { n: 4 } },
  ],
  edges: PARALLEL_TOOLS.edges,
};

/** What the tests need of a host: HTTP, SQL on its database, its log lines. */
interface Target {
  http(method: string, url: string, body?: unknown): Promise<{ status: number; body: any }>; // eslint-disable-line @typescript-eslint/no-explicit-any
  query<T>(sql: string, params?: unknown[]): Promise<T[]>;
  logs(): string[];
  close(): Promise<void>;
}

const CHAINS = { 'vendor.test.parallel-tools': PARALLEL_TOOLS, 'vendor.test.parallel-noops': PARALLEL_NOOPS };
const SCOPES = ['runs:create', 'runs:read', 'tools:read'];
// The scheduler ticks claim too, as in a real host; rate limits would only get in the way of the burst.
const ENV = { OPENWOP_SCHEDULER_ENABLED: 'true', OPENWOP_RATE_LIMIT_ENABLED: 'false' };

/** A host on the test database, in this process. */
async function onTestDatabase(): Promise<Target> {
  const t: TestApp = await createTestApp({ env: ENV });
  const key = await t.key({ scopes: SCOPES });
  await installChains(t, 'default', 'vendor.test.concurrency', CHAINS);
  return {
    http: (method, url, body) => t.http(method, url, { token: key, body }),
    query: async (sql, params) => t.ds.query(sql, params),
    logs: () => t.logs,
    close: () => t.close(),
  };
}

/** A host on an embedded engine of its own, in its own process (as `npm start` runs for a new user). */
async function onEmbeddedEngine(): Promise<Target> {
  const h: HostProcess = await startHostProcess({ env: ENV, scopes: SCOPES, chains: { tenant: 'default', name: 'vendor.test.concurrency', chains: CHAINS } });
  return {
    http: (method, url, body) => h.http(method, url, { body }),
    query: (sql, params) => h.query(sql, params),
    logs: () => h.logs,
    close: () => h.close(),
  };
}

const errorLines = (t: Target) => t.logs().filter((l) => /"level":"(error|fatal)"/.test(l));

async function waitAllTerminal(t: Target, ids: string[], timeoutMs: number): Promise<Record<string, number>> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const rows = await t.query<{ status: string; n: number }>(`SELECT "status", count(*)::int AS n FROM "run" WHERE "id" = ANY($1::uuid[]) GROUP BY "status"`, [ids]);
    const by = Object.fromEntries(rows.map((r) => [r.status, r.n]));
    if ((by.completed ?? 0) + (by.failed ?? 0) + (by.cancelled ?? 0) === ids.length || Date.now() > until) return by;
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function doubleCompletions(t: Target): Promise<unknown[]> {
  return t.query(`SELECT "stream_key", "node_id", count(*) AS n FROM "event" WHERE "event_type_name"("code", "type") = 'node.completed' GROUP BY 1, 2 HAVING count(*) > 1`);
}

describe.each([
  ['the test database', onTestDatabase],
  ['an embedded engine of its own', onEmbeddedEngine],
])('runs: concurrent clients on %s', (_label, start) => {
  let t: Target;

  beforeAll(async () => {
    t = await start();
  }, 180_000);

  afterAll(async () => {
    await t?.close();
  });

  it('answers 20 simultaneous POST /v1/runs of a chain with two parallel tool nodes 201, and completes all of them', async () => {
    const answers = await Promise.all(Array.from({ length: 20 }, () => t.http('POST', '/v1/runs', { workflowId: 'vendor.test.parallel-tools' })));
    expect(answers.map((a) => `${a.status} ${a.body.error ?? ''}`.trim())).toEqual(Array(20).fill('201'));
    const ids = answers.map((a) => a.body.runId as string);
    expect(await waitAllTerminal(t, ids, 120_000)).toEqual({ completed: 20 });
    for (const id of ids) {
      const run = await t.http('GET', `/v1/runs/${id}`);
      expect(Object.values(run.body.nodeStates as Record<string, { status: string }>).map((n) => n.status)).toEqual(['completed', 'completed', 'completed', 'completed']);
      expect(run.body.outputs).toEqual({ join: { done: true } });
    }
    const events = (await t.http('GET', `/v1/runs/${ids[0]}/events/poll?lastSequence=0`)).body.events as TestEvent[];
    expectSchemaValid(events);
    expect(events.filter((e) => e.type === 'tool.session.closed').map((e) => e.payload.outcome)).toEqual(['completed', 'completed']);
    expect(errorLines(t)).toEqual([]);
    expect(await doubleCompletions(t)).toEqual([]);
  }, 180_000);

  it('serves 16 clients starting 512 runs between them with no error', async () => {
    const statuses = new Map<string, number>();
    const ids: string[] = [];
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        for (let i = 0; i < 32; i++) {
          const r = await t.http('POST', '/v1/runs', { workflowId: 'vendor.test.parallel-noops' });
          const k = `${r.status} ${r.body.error ?? ''}`.trim();
          statuses.set(k, (statuses.get(k) ?? 0) + 1);
          if (r.status === 201) ids.push(r.body.runId);
        }
      }),
    );
    expect(Object.fromEntries(statuses)).toEqual({ '201': 512 });
    expect(await waitAllTerminal(t, ids, 300_000)).toEqual({ completed: 512 });
    const [{ n }] = await t.query<{ n: number }>(`SELECT count(*)::int AS n FROM "run_node" WHERE "run_id" = ANY($1::uuid[]) AND "status" <> 'completed'`, [ids]);
    expect(n).toBe(0);
    expect(errorLines(t)).toEqual([]);
    expect(await doubleCompletions(t)).toEqual([]);
  }, 420_000);
});
