/**
 * The run list reads a page's rows without their stored definitions, then each definition the page
 * refers to once (`definitionsByKey`): what the list answers from a definition (a deferred
 * parameter's run value among the variables) is the same as the run's own read, for runs of several definitions in one page,
 * and two tenants running the same chain each get their own stored row. The list statement itself
 * carries no subquery per row (one copy of a definition per run read and sent).
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { Client as PgClient } from 'pg';
import { createTestApp, TestApp } from '../support/test-app';
import { waitForStatus } from './run-kit';

// Deferred parameters (RFC 0124; the test seams' chains): a run's `configurable` value shows in its
// variables only where its definition names the parameter, so an answer without the definition
// would leave it out. Two chains, so a page refers to two stored definitions.
const CHAINS = ['conformance.deferred', 'conformance.deferred-sensitive'];

describe('runs: the list reads each stored definition of a page once', () => {
  let t: TestApp;
  const keys: Record<string, string> = {};

  beforeAll(async () => {
    t = await createTestApp({ env: { OPENWOP_TEST_SEAMS: 'true' } });
    for (const tenant of ['acme', 'globex']) {
      keys[tenant] = await t.key({ tenant, scopes: ['runs:create', 'runs:read'] });
    }
  });
  afterAll(async () => {
    await t?.close();
  });

  it('answers the same variables as the run itself, for runs of two definitions and two tenants', async () => {
    const made: Array<{ tenant: string; runId: string }> = [];
    for (const tenant of ['acme', 'globex']) {
      for (const workflowId of [CHAINS[0], CHAINS[1], CHAINS[0]]) {
        const r = await t.http('POST', '/v1/runs', { token: keys[tenant], body: { workflowId, configurable: { topic: `${tenant}-${workflowId}` } } });
        expect(r.status).toBe(201);
        made.push({ tenant, runId: r.body.runId as string });
      }
    }
    for (const m of made) await waitForStatus(t, keys[m.tenant], m.runId, ['completed']);

    const statements: string[] = [];
    const capture = new AsyncLocalStorage<string[]>();
    const original = PgClient.prototype.query;
    PgClient.prototype.query = function (this: PgClient, ...args: unknown[]) {
      const first = args[0] as string | { text?: string };
      const sql = typeof first === 'string' ? first : first?.text;
      if (sql) capture.getStore()?.push(sql);
      return (original as (...a: unknown[]) => unknown).apply(this, args);
    } as typeof PgClient.prototype.query;
    try {
      for (const tenant of ['acme', 'globex']) {
        const list = await capture.run(statements, () => t.http('GET', '/v1/runs?limit=50', { token: keys[tenant] }));
        expect(list.status).toBe(200);
        const runs = list.body.runs as Array<{ runId: string; workflowId: string; variables: Record<string, unknown> }>;
        expect(runs.map((r) => r.runId).sort()).toEqual(made.filter((m) => m.tenant === tenant).map((m) => m.runId).sort());
        for (const r of runs) {
          const own = await t.http('GET', `/v1/runs/${r.runId}`, { token: keys[tenant] });
          expect(r.variables).toEqual(own.body.variables);
          expect(r.variables).toMatchObject({ topic: `${tenant}-${r.workflowId}` });
        }
      }
    } finally {
      PgClient.prototype.query = original;
    }
    const listStatements = statements.filter((s) => /FROM "run" "r"/.test(s));
    expect(listStatements.length).toBeGreaterThanOrEqual(2);
    for (const s of listStatements) expect(s).not.toMatch(/run_definition|run_principal/);
    // One read of the page's definitions per list: two distinct definitions, one statement.
    expect(statements.filter((s) => /FROM "run_definition" d WHERE d."tenant" = \$1 AND d."key" = ANY/.test(s))).toHaveLength(2);
  });
});
