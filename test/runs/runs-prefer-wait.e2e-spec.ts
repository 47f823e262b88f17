/**
 * `POST /v1/runs` with `Prefer: wait=N` (RFC 7240 §4.3): the 201 is sent once the run first stops
 * (completes, fails, waits on an interrupt), at most N seconds (capped at 60), with the run as it is
 * then, and `Preference-Applied: wait=N`. Without the preference, with `wait=0` or a malformed one
 * (ignored, RFC 7240 §2) and on an idempotent replay, the answer is the run as created, as before.
 * Under major 2 the same handler answers in the v2 shape.
 */
import { createTestApp, TestApp } from '../support/test-app';
import { installChains, noopChain } from './run-kit';

const GATE = {
  nodes: [
    { id: 'gate', typeId: 'core.approval', config: { title: 'Ship it?', allowSelfApproval: true } },
    { id: 'done', typeId: 'core.noop', config: {} },
  ],
  edges: [{ from: 'gate', to: 'done' }],
};
const LONG = { nodes: [{ id: 'wait', typeId: 'core.delay', config: { ms: 120_000 } }], edges: [] };

describe('runs: POST /v1/runs with Prefer: wait', () => {
  let t: TestApp;
  let key: string;

  beforeAll(async () => {
    t = await createTestApp({ env: { OPENWOP_PROTOCOL_MAJORS: '1,2' } });
    await installChains(t, 'default', 'vendor.test.prefer-wait', { 'vendor.test.quick': noopChain(3), 'vendor.test.gate': GATE, 'vendor.test.long': LONG });
    key = await t.key({ scopes: ['runs:create', 'runs:read', 'runs:cancel'] });
  }, 120_000);

  afterAll(async () => {
    await t?.close();
  });

  const create = (workflowId: string, headers: Record<string, string> = {}) => t.http('POST', '/v1/runs', { token: key, body: { workflowId }, headers });

  it('answers a short run completed, with its outputs, in the one request; Preference-Applied says so', async () => {
    const r = await create('vendor.test.quick', { prefer: 'wait=10' });
    expect(r.status).toBe(201);
    expect(r.headers['preference-applied']).toBe('wait=10');
    expect(r.body).toMatchObject({ status: 'completed', workflowId: 'vendor.test.quick' });
    expect(r.body.statusUrl).toMatch(new RegExp(`/v1/runs/${r.body.runId}$`));
    // The answer is the run as GET reads it then.
    const read = await t.http('GET', `/v1/runs/${r.body.runId}`, { token: key });
    expect({ ...r.body, eventsUrl: undefined, statusUrl: undefined }).toEqual({ ...read.body, eventsUrl: undefined, statusUrl: undefined });
  });

  it('answers a run that asks for approval waiting-approval, with its interrupt', async () => {
    const r = await create('vendor.test.gate', { prefer: 'respond-async, wait=10' });
    expect(r.status).toBe(201);
    expect(r.headers['preference-applied']).toBe('wait=10');
    expect(r.body).toMatchObject({ status: 'waiting-approval', currentNodeId: 'gate', interrupt: { nodeId: 'gate' } });
    await t.http('POST', `/v1/runs/${r.body.runId}/cancel`, { token: key, body: {} });
  });

  it('answers a run still going when the wait ends as it is then, and never cancels it', async () => {
    const at = Date.now();
    const r = await create('vendor.test.long', { prefer: 'wait=1' });
    expect(Date.now() - at).toBeGreaterThanOrEqual(1000);
    expect(r.status).toBe(201);
    expect(r.headers['preference-applied']).toBe('wait=1');
    expect(r.body.status).toBe('running');
    expect((await t.http('GET', `/v1/runs/${r.body.runId}`, { token: key })).body.status).toBe('running');
    await t.http('POST', `/v1/runs/${r.body.runId}/cancel`, { token: key, body: {} });
  });

  it('caps the wait at 60 seconds and says so', async () => {
    const r = await create('vendor.test.quick', { prefer: 'wait=86400' });
    expect(r.headers['preference-applied']).toBe('wait=60');
    expect(r.body.status).toBe('completed');
  });

  it.each([
    ['no preference', undefined],
    ['wait=0', 'wait=0'],
    ['a malformed wait', 'wait=soon'],
    ['a negative wait', 'wait=-5'],
    ['another preference only', 'return=minimal'],
  ])('%s: the run as created, no Preference-Applied', async (_what, prefer) => {
    const r = await create('vendor.test.long', prefer === undefined ? {} : { prefer });
    expect(r.status).toBe(201);
    expect(r.headers['preference-applied']).toBeUndefined();
    expect(['pending', 'running']).toContain(r.body.status);
    await t.http('POST', `/v1/runs/${r.body.runId}/cancel`, { token: key, body: {} });
  });

  it('an idempotent replay is the first answer again, not waited on', async () => {
    const first = await create('vendor.test.quick', { 'idempotency-key': 'prefer-wait-replay' });
    expect(first.headers['preference-applied']).toBeUndefined();
    const again = await create('vendor.test.quick', { 'idempotency-key': 'prefer-wait-replay', prefer: 'wait=10' });
    expect(again.status).toBe(201);
    expect(again.headers['openwop-idempotent-replay']).toBe('true');
    expect(again.headers['preference-applied']).toBeUndefined();
    expect(again.body).toEqual(first.body);
  });

  it('under major 2 the same handler answers in the v2 shape (a tenant-bound run id)', async () => {
    const r = await t.http('POST', '/runs', { token: key, body: { workflowId: 'vendor.test.quick' }, headers: { 'openwop-version': '2.0', prefer: 'wait=10' } });
    expect(r.status).toBe(201);
    expect(r.headers['preference-applied']).toBe('wait=10');
    expect(r.body.status).toBe('completed');
    expect(r.body.runId).toMatch(/^default\//);
  });
});
