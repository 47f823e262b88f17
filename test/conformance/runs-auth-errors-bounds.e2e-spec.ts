/**
 * Asserts what the official `auth`, `errors` and `run-execution-bounds-shape` scenarios assert
 * (openwop/openwop conformance/src/scenarios), under the test seams switch the suite runs with.
 */
import { createTestApp, TestApp } from '../support/test-app';

describe('conformance: auth, errors, run-execution-bounds-shape', () => {
  let t: TestApp;
  let key: string;

  beforeAll(async () => {
    t = await createTestApp({ env: { OPENWOP_TEST_SEAMS: 'true' } });
    key = await t.key({ scopes: ['runs:create', 'runs:read', 'tools:read'] });
  });

  afterAll(async () => {
    await t?.close();
  });

  const envelope = (body: Record<string, unknown>) => {
    expect(typeof body.error).toBe('string');
    expect(typeof body.message).toBe('string');
    expect(Object.keys(body).filter((k) => !['error', 'message', 'details'].includes(k))).toEqual([]);
    if (body.details !== undefined) expect(body.details && typeof body.details).toBe('object');
  };

  it('auth: POST /v1/runs without or with an invalid credential is 401 with the envelope', async () => {
    const none = await t.http('POST', '/v1/runs', { body: { workflowId: 'conformance-noop' } });
    expect(none.status).toBe(401);
    envelope(none.body);
    const invalid = await t.http('POST', '/v1/runs', { body: { workflowId: 'conformance-noop' }, headers: { authorization: 'Bearer hk_definitely_not_a_real_key_12345' } });
    expect(invalid.status).toBe(401);
  });

  it('errors: unknown run ids and an empty body answer the canonical envelope', async () => {
    const unknown = await t.http('GET', '/v1/runs/openwop-conformance-this-run-id-does-not-exist', { token: key });
    expect([403, 404]).toContain(unknown.status);
    envelope(unknown.body);
    const probe = await t.http('GET', `/v1/runs/openwop-conformance-correlation-probe-${Date.now()}`, { token: key });
    expect([400, 403, 404]).toContain(probe.status);
    expect(probe.body.correlationId).toBeUndefined();
    const empty = await t.http('POST', '/v1/runs', { token: key, body: {} });
    expect(empty.status).toBeGreaterThanOrEqual(400);
    expect(empty.status).toBeLessThan(500);
    envelope(empty.body);
  });

  it('advertises well-formed limits and the fixtures, and conformance-noop completes', async () => {
    const disco = (await t.http('GET', '/.well-known/openwop')).body;
    expect(Number.isInteger(disco.limits.maxRunDurationMs) && disco.limits.maxRunDurationMs >= 1000).toBe(true);
    expect(Number.isInteger(disco.limits.maxLoopIterations) && disco.limits.maxLoopIterations >= 1).toBe(true);
    expect(disco.fixtures).toEqual(expect.arrayContaining(['conformance-noop', 'conformance-run-duration-breach']));
    const run = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'conformance-noop' } });
    expect(run.status).toBe(201);
    for (let i = 0; i < 200; i++) {
      const s = await t.http('GET', `/v1/runs/${run.body.runId}`, { token: key });
      if (s.body.status === 'completed') return;
      await new Promise((r) => setTimeout(r, 25));
    }
    throw new Error('conformance-noop did not complete');
  });

  it('run-duration breach: runTimeoutMs 1000 fails with run_timeout and cap.breached observed > limit', async () => {
    const create = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'conformance-run-duration-breach', configurable: { runTimeoutMs: 1000 } } });
    expect(create.status).toBe(201);
    let terminal: Record<string, any> = {}; // eslint-disable-line @typescript-eslint/no-explicit-any
    for (let i = 0; i < 200; i++) {
      terminal = (await t.http('GET', `/v1/runs/${create.body.runId}`, { token: key })).body;
      if (['completed', 'failed', 'cancelled'].includes(terminal.status)) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(terminal.status).toBe('failed');
    expect(terminal.error?.code).toBe('run_timeout');
    const events = (await t.http('GET', `/v1/runs/${create.body.runId}/events/poll?lastSequence=0&timeout=1`, { token: key })).body.events as Array<{ type: string; payload: Record<string, number | string> }>;
    const breach = events.find((e) => e.type === 'cap.breached')!;
    expect(breach.payload.kind).toBe('run-duration');
    expect(typeof breach.payload.observed).toBe('number');
    expect(typeof breach.payload.limit).toBe('number');
    expect(breach.payload.observed > breach.payload.limit).toBe(true);
  });

  it('serves no fixtures while the test seams are off', async () => {
    const plain = await createTestApp();
    try {
      const k = await plain.key({ scopes: ['runs:create'] });
      expect((await plain.http('GET', '/.well-known/openwop')).body.fixtures).toBeUndefined();
      expect((await plain.http('POST', '/v1/runs', { token: k, body: { workflowId: 'conformance-noop' } })).status).toBe(404);
    } finally {
      await plain.close();
    }
  });
});
