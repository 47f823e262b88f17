/**
 * RFC 0053 dead letters: a node's RFC 0009 `config.retry` policy (node.retried between attempts), the run
 * dead-lettered when it is exhausted (`run.dead_lettered`, the sink), and the sink's API: list, inspect, retry,
 * purge; the advertisement and the exhaust seam.
 */
import { deadLetter, deadLettersList } from '../../src/cli/runs.cli';
import { sink } from '../support/sink';
import { createTestApp, TestApp } from '../support/test-app';
import { expectSchemaValid, installChains, runEvents, waitForStatus } from './run-kit';

describe('runs: RFC 0053 dead letters', () => {
  let t: TestApp;
  let key: string;
  let reader: string;

  beforeAll(async () => {
    t = await createTestApp({ env: { OPENWOP_TEST_SEAMS: 'true' } });
    key = await t.key({ scopes: ['runs:create', 'runs:read', 'runs:cancel'] });
    reader = await t.key({ scopes: ['runs:read'] });
    await installChains(t, 'default', 'vendor.test.dead-letter-chains', {
      'vendor.test.flaky': {
        nodes: [{ id: 'start', typeId: 'core.noop' }, { id: 'flaky', typeId: 'core.fail', config: { code: 'upstream_down', message: 'down', retry: { maxAttempts: 3, backoffMs: 5 } } }],
        edges: [{ from: 'start', to: 'flaky' }],
      },
      'vendor.test.once': { nodes: [{ id: 'once', typeId: 'core.fail', config: { code: 'upstream_down' } }] },
    });
  });

  afterAll(async () => {
    await t?.close();
  });

  it('advertises the sink and refuses a bad retry policy at create', async () => {
    const d = await t.http('GET', '/.well-known/openwop');
    expect(d.body.deadLetter).toEqual({ supported: true, retentionDays: 30 });
    const bad = await t.http('POST', '/v1/host/sample/workflows', {
      token: key,
      body: { workflowId: 'vendor.test.bad-retry', nodes: [{ nodeId: 'x', typeId: 'core.noop', config: { retry: { maxAttempts: 0, jitter: true } } }], edges: [] },
    });
    expect(bad.status).toBeGreaterThanOrEqual(400);
    expect(JSON.stringify(bad.body)).toContain('config.retry.maxAttempts');
  });

  it('retries a failing node, then dead-letters the run; list, inspect, retry and purge it', async () => {
    const r = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.test.flaky', inputs: { n: 1 } } });
    expect(r.status).toBe(201);
    const done = await waitForStatus(t, key, r.body.runId, ['completed', 'failed']);
    expect([done.status, done.error?.code]).toEqual(['failed', 'upstream_down']);
    const events = await runEvents(t, key, r.body.runId);
    expectSchemaValid(events);
    expect(events.filter((e) => e.type === 'node.retried').map((e) => e.payload.attempt)).toEqual([2, 3]);
    const lettered = events.filter((e) => e.type === 'run.dead_lettered');
    expect(lettered.map((e) => e.payload)).toEqual([{ runId: r.body.runId, nodeId: 'flaky', reason: 'upstream_down', attempts: 3 }]);
    const types = events.map((e) => e.type);
    expect(types.indexOf('run.dead_lettered')).toBeLessThan(types.indexOf('run.failed'));

    // A node without a policy fails once and is not dead-lettered.
    const once = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.test.once' } });
    await waitForStatus(t, key, once.body.runId, ['failed']);
    expect((await runEvents(t, key, once.body.runId)).some((e) => e.type === 'node.retried' || e.type === 'run.dead_lettered')).toBe(false);

    const list = await t.http('GET', '/v1/dead-letters?workflowId=vendor.test.flaky', { token: reader });
    expect(list.status).toBe(200);
    expect(list.body.deadLetters.map((d: { runId: string }) => d.runId)).toEqual([r.body.runId]);
    const one = await t.http('GET', `/v1/dead-letters/${r.body.runId}`, { token: reader });
    expect(one.body).toMatchObject({ runId: r.body.runId, workflowId: 'vendor.test.flaky', status: 'failed', nodeId: 'flaky', reason: 'upstream_down', attempts: 3, retriedRunIds: [] });
    expect(Date.parse(one.body.expiresAt) - Date.parse(one.body.deadLetteredAt)).toBe(30 * 86_400_000);
    expect((await t.http('GET', `/v1/dead-letters/${once.body.runId}`, { token: reader })).status).toBe(404);

    expect((await t.http('POST', `/v1/dead-letters/${r.body.runId}/retry`, { token: reader })).status).toBe(403);
    const retried = await t.http('POST', `/v1/dead-letters/${r.body.runId}/retry`, { token: key });
    expect(retried.status).toBe(201);
    expect(retried.body.deadLetter.retriedRunIds).toEqual([retried.body.runId]);
    const again = await t.http('GET', `/v1/runs/${retried.body.runId}`, { token: key });
    expect([again.body.workflowId, again.body.variables?.inputs]).toEqual(['vendor.test.flaky', { n: 1 }]);
    await waitForStatus(t, key, retried.body.runId, ['failed']);

    // Paging: two letters now (the retry failed the same way), one per page.
    const p1 = await t.http('GET', '/v1/dead-letters?workflowId=vendor.test.flaky&limit=1', { token: reader });
    expect(p1.body.deadLetters.map((d: { runId: string }) => d.runId)).toEqual([retried.body.runId]);
    const p2 = await t.http('GET', `/v1/dead-letters?workflowId=vendor.test.flaky&limit=1&cursor=${p1.body.nextCursor}`, { token: reader });
    expect([p2.body.deadLetters.map((d: { runId: string }) => d.runId), p2.body.nextCursor]).toEqual([[r.body.runId], null]);

    expect((await t.http('DELETE', `/v1/dead-letters/${r.body.runId}`, { token: reader })).status).toBe(403);
    expect((await t.http('DELETE', `/v1/dead-letters/${r.body.runId}`, { token: key })).status).toBe(204);
    expect((await t.http('GET', `/v1/dead-letters/${r.body.runId}`, { token: reader })).status).toBe(404);
    expect((await t.http('GET', `/v1/runs/${r.body.runId}`, { token: key })).status).toBe(200);
  });

  it('keeps another tenant out', async () => {
    const other = await t.key({ tenant: 'other-tenant', scopes: ['runs:read'] });
    const list = await t.http('GET', '/v1/dead-letters', { token: other });
    expect([list.status, list.body.deadLetters]).toEqual([200, []]);
  });

  it('the exhaust seam answers the logged run.dead_lettered and a fork of the dead-lettered run', async () => {
    const ex = await t.http('POST', '/v1/host/sample/deadletter/exhaust', { token: key, body: { scenario: 'exhaust-retries' } });
    expect(ex.status).toBe(200);
    expect(ex.body.event).toEqual({ type: 'run.dead_lettered', payload: { runId: ex.body.runId, nodeId: 'flaky', reason: 'conformance_transient', attempts: 3 } });
    const fork = await t.http('POST', '/v1/host/sample/deadletter/exhaust', { token: key, body: { scenario: 'fork-after-dead-letter' } });
    expect(fork.body.forkEligible).toBe(true);
    expect((await t.http('GET', `/v1/runs/${fork.body.forkRunId}`, { token: key })).status).toBe(200);
  });

  it('the CLI lists, inspects, retries and purges dead letters', async () => {
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const addr = t.app.getHttpServer().address();
    const url = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
    const r = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.test.flaky' } });
    await waitForStatus(t, key, r.body.runId, ['failed']);
    const out = sink();
    expect(await deadLettersList({ url, key, out, err: sink() }, { workflowId: 'vendor.test.flaky' })).toBe(0);
    expect(out.text()).toContain(`${r.body.runId}  vendor.test.flaky  node flaky  upstream_down after 3 attempts`);
    const one = sink();
    expect(await deadLetter({ url, key, out: one, err: sink() }, 'get', r.body.runId, {})).toBe(0);
    expect(one.text()).toContain(`${r.body.runId}  failed  vendor.test.flaky  node flaky`);
    const retried = sink();
    expect(await deadLetter({ url, key, out: retried, err: sink() }, 'retry', r.body.runId, { json: true })).toBe(0);
    const newRun = JSON.parse(retried.text()).runId as string;
    expect((await t.http('GET', `/v1/dead-letters/${r.body.runId}`, { token: key })).body.retriedRunIds).toEqual([newRun]);
    expect(await deadLetter({ url, key, out: sink(), err: sink() }, 'purge', r.body.runId, {})).toBe(0);
    expect((await t.http('GET', `/v1/dead-letters/${r.body.runId}`, { token: key })).status).toBe(404);
  });
});
