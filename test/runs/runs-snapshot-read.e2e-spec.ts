/**
 * `GET /v1/runs/{runId}` reads a run's whole snapshot in one prepared statement: the row, its nodes,
 * its compensation status, its artifacts, its child runs and its event stream's last sequence (the
 * ETag's) were six round trips, four of them built by TypeORM at each read. Counted in the pg driver, so the bound is enforced; the ETag is the
 * run's own whatever the case of the id in the path, and a run of another tenant is a 404 that
 * brings nothing back.
 */
import { oneLine, StatementCapture } from '../support/statement-capture';
import { createTestApp, TestApp } from '../support/test-app';
import { installChains, noopChain, waitForStatus } from './run-kit';

const capture = new StatementCapture();

/** The statements `fn` sent: a named (prepared) statement by its name, any other by its text. */
async function counted<T>(fn: () => Promise<T>): Promise<{ result: T; texts: string[] }> {
  const { result, statements } = await capture.during(fn);
  return { result, texts: statements.map((s) => s.name ?? oneLine(s.text, 100)) };
}

describe('runs: a snapshot is one statement', () => {
  let t: TestApp;
  let key: string;
  let other: string;
  let runId: string;

  beforeAll(async () => {
    capture.install();
    t = await createTestApp({ env: { OPENWOP_SCHEDULER_ENABLED: 'true' } });
    key = await t.key({ scopes: ['runs:create', 'runs:read'] });
    other = await t.key({ tenant: 'other', scopes: ['runs:create', 'runs:read'] });
    await installChains(t, 'default', 'vendor.test.snapshot', { 'vendor.test.snapshot.two': noopChain(2) });
    const created = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.test.snapshot.two', inputs: { a: 1 } } });
    expect(created.status).toBe(201);
    runId = created.body.runId as string;
    await waitForStatus(t, key, runId, ['completed']);
  });

  afterAll(async () => {
    capture.restore();
    await t?.close();
  });

  it('answers a completed run with its nodes, variables and ETag from one prepared statement', async () => {
    // Warm: the key verified once (its check is cached for a few seconds).
    expect((await t.http('GET', `/v1/runs/${runId}`, { token: key })).status).toBe(200);
    const { result: r, texts } = await counted(() => t.http('GET', `/v1/runs/${runId}`, { token: key }));
    expect(r.status).toBe(200);
    expect(texts).toEqual(['openwop_run_snapshot_read']);
    expect(r.body).toMatchObject({ runId, status: 'completed', compensationStatus: 'none', variables: { inputs: { a: 1 } } });
    expect(Object.keys(r.body.nodeStates as object)).toHaveLength(2);
    // The tag's sequence is the stream's last (run.started ... run.completed), not 0.
    const [{ last }] = (await t.ds.query(`SELECT "last_sequence"::int AS "last" FROM "event_stream" WHERE "stream_id" = $1`, [runId])) as Array<{ last: number }>;
    expect(last).toBeGreaterThan(1);
    expect(r.headers.etag).toMatch(new RegExp(`^"${last}-[A-Za-z0-9_-]{22}"$`));
  });

  it('gives the same ETag for the id written in capitals (the run\'s stream, not the path\'s text)', async () => {
    const lower = await t.http('GET', `/v1/runs/${runId}`, { token: key });
    const upper = await t.http('GET', `/v1/runs/${runId.toUpperCase()}`, { token: key });
    expect(upper.status).toBe(200);
    expect(upper.headers.etag).toBe(lower.headers.etag);
    expect((await t.http('GET', `/v1/runs/${runId.toUpperCase()}`, { token: key, headers: { 'if-none-match': String(lower.headers.etag) } })).status).toBe(304);
  });

  it('answers a run of another tenant 404, as an unknown one, in one statement', async () => {
    expect((await t.http('GET', `/v1/runs/${runId}`, { token: other })).status).toBe(404);
    const { result: foreign, texts } = await counted(() => t.http('GET', `/v1/runs/${runId}`, { token: other }));
    expect(foreign.status).toBe(404);
    expect(texts).toHaveLength(1);
    const unknown = await t.http('GET', `/v1/runs/00000000-0000-4000-8000-000000000000`, { token: other });
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual(foreign.body);
  });
});
