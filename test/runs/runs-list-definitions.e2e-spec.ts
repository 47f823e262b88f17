/**
 * The run list is one statement (`readRunPage`) that sends each stored definition a page refers to
 * once, with the first of its runs on the page: what the list answers from a definition (a deferred
 * parameter's run value among the variables) is the same as the run's own read, for runs of several
 * definitions in one page, and two tenants running the same chain each get their own stored row. No
 * definition is read and sent once per run.
 */
import { CapturedStatement, StatementCapture } from '../support/statement-capture';
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

    const capture = new StatementCapture();
    const statements: CapturedStatement[] = [];
    capture.install();
    try {
      for (const tenant of ['acme', 'globex']) {
        const { result: list, statements: sent } = await capture.during(() => t.http('GET', '/v1/runs?limit=50', { token: keys[tenant] }));
        statements.push(...sent);
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
      capture.restore();
    }
    // One statement per page (the key's check aside): the page's rows, with a definition on the first run of each.
    const listStatements = statements.filter((st) => /FROM "run" r WHERE/.test(st.text));
    expect(listStatements).toHaveLength(2);
    expect(statements.filter((st) => /run_compensation|run_definition/.test(st.text) && !listStatements.includes(st))).toEqual([]);
    for (const st of listStatements) {
      expect(st.rows).toHaveLength(3);
      // Two distinct definitions on each tenant's page: each sent once, by the first of its runs.
      expect(st.rows.filter((r) => r.definition !== null)).toHaveLength(2);
      expect(new Set(st.rows.map((r) => r.definition_key)).size).toBe(2);
    }
  });
});
