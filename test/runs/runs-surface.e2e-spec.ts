/**
 * POST /v1/runs fidelity (rest-endpoints.md, idempotency.md): the replayed first answer with
 * `openwop-idempotent-replay`, the 201's run URLs, `X-Dedup` scope claims, the gated body fields,
 * idempotent cancel with `Idempotency-Key`, the Layer-2 invocation log and its concurrent-claim
 * seam, and the conformance fixtures.
 */
import { ActivityFailedError, ActivityLedger, effectRunner, logicalInvocationId } from '../../src/platform/idempotency/activity-ledger.service';
import { RunLauncher } from '../../src/capabilities/runs/run-launcher.service';
import { createTestApp, TestApp } from '../support/test-app';
import { runEvents, waitForStatus } from './run-kit';

const SEAM = '/v1/host/sample/test/idempotency/concurrent-claim';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('runs: creation fidelity, idempotency, dedup, cancel, fixtures', () => {
  let t: TestApp;
  let key: string;
  const post = (body: unknown, headers: Record<string, string> = {}, token = key) => t.http('POST', '/v1/runs', { token, body, headers });
  const cancel = (runId: string, headers: Record<string, string> = {}, body: unknown = {}) => t.http('POST', `/v1/runs/${runId}/cancel`, { token: key, body, headers });

  beforeAll(async () => {
    t = await createTestApp({ env: { OPENWOP_TEST_SEAMS: 'true' } });
    key = await t.key({ scopes: ['runs:create', 'runs:read', 'runs:cancel'] });
  });

  afterAll(async () => {
    await t?.close();
  });

  describe('the 201 and idempotent replay', () => {
    it('answers 201 with eventsUrl and statusUrl; a keyed replay answers the first answer again with openwop-idempotent-replay: true', async () => {
      const body = { workflowId: 'conformance-idempotent', inputs: { nonce: 'n-1' } };
      const first = await post(body, { 'idempotency-key': 'replay-1' });
      expect(first.status).toBe(201);
      expect(first.headers['openwop-idempotent-replay']).toBe('false');
      const runId = first.body.runId as string;
      expect(first.body.status).toBe('pending');
      expect(first.body.statusUrl).toMatch(new RegExp(`^https?://[^/]+/v1/runs/${runId}$`));
      expect(first.body.eventsUrl).toBe(`${first.body.statusUrl}/events`);
      // The URLs answer.
      const path = new URL(first.body.statusUrl).pathname;
      expect((await t.http('GET', path, { token: key })).status).toBe(200);

      // The run finishes; the replay still answers what the first request was answered.
      await waitForStatus(t, key, runId, ['completed']);
      const replay = await post(body, { 'idempotency-key': 'replay-1' });
      expect(replay.status).toBe(201);
      expect(replay.headers['openwop-idempotent-replay']).toBe('true');
      expect(replay.body).toEqual(first.body);
      const listed = await t.http('GET', '/v1/runs?limit=100', { token: key });
      expect(listed.body.runs.filter((r: { runId: string }) => r.runId === runId)).toHaveLength(1);
    });

    it('keeps five retries 100 ms apart on one run, and refuses another body under the key with 409 idempotency_key_mismatch', async () => {
      const body = { workflowId: 'conformance-idempotent', inputs: { nonce: 'n-2' } };
      const ids = new Set<string>();
      for (let i = 0; i < 5; i++) {
        const r = await post(body, { 'idempotency-key': 'retry-2' });
        expect(r.status).toBe(201);
        expect(r.headers['openwop-idempotent-replay']).toBe(i === 0 ? 'false' : 'true');
        ids.add(r.body.runId);
        await sleep(100);
      }
      expect(ids.size).toBe(1);
      const other = await post({ ...body, inputs: { nonce: 'different' } }, { 'idempotency-key': 'retry-2' });
      expect(other.status).toBe(409);
      expect(other.body.error).toBe('idempotency_key_mismatch');
      expect(other.headers['openwop-idempotent-replay']).toBeUndefined();
    });

    it('answers concurrent duplicates with one run', async () => {
      const body = { workflowId: 'conformance-idempotent', inputs: { nonce: 'n-3' } };
      const all = await Promise.all(Array.from({ length: 6 }, () => post(body, { 'idempotency-key': 'concurrent-3' })));
      expect(all.map((r) => r.status)).toEqual(Array(6).fill(201));
      expect(new Set(all.map((r) => r.body.runId)).size).toBe(1);
      expect(all.filter((r) => r.headers['openwop-idempotent-replay'] === 'false')).toHaveLength(1);
    });

    it('keeps host-minted keys out of the callers\' keyspace: a caller sending a host key neither takes nor replays the host run', async () => {
      const launcher = t.app.get(RunLauncher);
      const principal = { tenant: 'default', principal: 'tester', scopes: new Set(['runs:create', 'runs:read']), kind: 'system' as const };
      const hostRun = await launcher.launch(principal, { workflowId: 'conformance-noop' }, { idempotencyKey: 'automation:slot-1' });
      const caller = await post({ workflowId: 'conformance-noop' }, { 'idempotency-key': 'automation:slot-1' });
      expect(caller.status).toBe(201);
      expect(caller.headers['openwop-idempotent-replay']).toBe('false');
      expect(caller.body.runId).not.toBe(hostRun.runId);
      // The host's own retry still finds its run.
      expect((await launcher.launch(principal, { workflowId: 'conformance-noop' }, { idempotencyKey: 'automation:slot-1' })).runId).toBe(hostRun.runId);
      // And no caller key can be spelled like a stored host key.
      expect((await post({ workflowId: 'conformance-noop' }, { 'idempotency-key': 'host automation:slot-1' })).status).toBe(400);
    });

    it('sends no replay header without a key, and refuses a malformed key', async () => {
      const plain = await post({ workflowId: 'conformance-noop' });
      expect(plain.status).toBe(201);
      expect(plain.headers['openwop-idempotent-replay']).toBeUndefined();
      const bad = await post({ workflowId: 'conformance-noop' }, { 'idempotency-key': 'has space' });
      expect(bad.status).toBe(400);
      expect(bad.body.error).toBe('validation_error');
    });
  });

  describe('X-Dedup: enforce', () => {
    it('answers 409 run_already_active with Retry-After while a run of the scope is active, and admits the scope again once it ended', async () => {
      const body = { workflowId: 'conformance-cancellable', inputs: { delaySeconds: 30 }, scopeId: 'scope-a' };
      const first = await post(body, { 'x-dedup': 'enforce' });
      expect(first.status).toBe(201);
      const dup = await post(body, { 'x-dedup': 'enforce' });
      expect(dup.status).toBe(409);
      expect(dup.body.error).toBe('run_already_active');
      expect(dup.body.details).toMatchObject({ activeRunId: first.body.runId, activeHost: 'cloud' });
      expect(Number(dup.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect(dup.body.details.retryAfter).toBe(Number(dup.headers['retry-after']));
      // Another scope, and the same scope without X-Dedup, are not claimed.
      expect((await post({ ...body, scopeId: 'scope-b' }, { 'x-dedup': 'enforce' })).status).toBe(201);
      const unenforced = await post(body);
      expect(unenforced.status).toBe(201);
      // Another tenant's run of the same scope id is not this tenant's business.
      const other = await t.key({ tenant: 'other-tenant', scopes: ['runs:create'] });
      expect((await post(body, { 'x-dedup': 'enforce' }, other)).status).toBe(201);

      for (const id of [first.body.runId, unenforced.body.runId]) expect((await cancel(id)).status).toBe(200);
      await waitForStatus(t, key, first.body.runId, ['cancelled']);
      await waitForStatus(t, key, unenforced.body.runId, ['cancelled']);
      const again = await post(body, { 'x-dedup': 'enforce' });
      expect(again.status).toBe(201);
      await cancel(again.body.runId);
    });

    it('holds the claim atomically when enforced requests race', async () => {
      const body = { workflowId: 'conformance-cancellable', inputs: { delaySeconds: 30 }, scopeId: 'scope-race' };
      const all = await Promise.all(Array.from({ length: 5 }, () => post(body, { 'x-dedup': 'enforce' })));
      expect(all.filter((r) => r.status === 201)).toHaveLength(1);
      expect(all.filter((r) => r.status === 409 && r.body.error === 'run_already_active')).toHaveLength(4);
      await cancel(all.find((r) => r.status === 201)!.body.runId);
    });

    it('refuses X-Dedup without a scopeId, and any other X-Dedup value', async () => {
      const none = await post({ workflowId: 'conformance-noop' }, { 'x-dedup': 'enforce' });
      expect(none.status).toBe(400);
      expect(none.body.error).toBe('validation_error');
      expect((await post({ workflowId: 'conformance-noop', scopeId: 's' }, { 'x-dedup': 'maybe' })).status).toBe(400);
    });
  });

  describe('the other body fields', () => {
    it('refuses the gated fields with their documented codes and creates no run', async () => {
      const before = (await t.ds.query(`SELECT count(*)::int AS n FROM "run"`))[0].n;
      const evalRun = await post({ mode: 'eval', evalSuiteRef: 'https://example.com/suite.json', agentId: 'agent-1' });
      expect(evalRun.status).toBe(501);
      expect(evalRun.body.error).toBe('capability_not_provided');
      const residency = await post({ workflowId: 'conformance-noop', residency: { region: 'eu-west-1' } });
      expect(residency.status).toBe(422);
      expect(residency.body.error).toBe('residency_unavailable');
      const mock = await post({ workflowId: 'conformance-noop', configurable: { mockProvider: { id: 'stream-text' } } });
      expect(mock.status).toBe(403);
      expect(mock.body.error).toBe('mock_provider_forbidden');
      const force = await post({ workflowId: 'conformance-noop' }, { 'x-force-engine-version': '1' });
      expect(force.status).toBe(403);
      expect(force.body.error).toBe('force_engine_version_forbidden');
      expect((await post({ workflowId: 'conformance-noop' }, { 'x-force-engine-version': 'one' })).status).toBe(400);
      const foreign = await post({ workflowId: 'conformance-noop', tenantId: 'someone-else' });
      expect(foreign.status).toBe(403);
      expect((await post({ workflowId: 'conformance-noop', mode: 'batch' })).status).toBe(400);
      expect((await post({ workflowId: 'conformance-noop', notAField: 1 })).status).toBe(400);
      expect((await post({ workflowId: 'conformance-noop', callbackUrl: 'not a url' })).status).toBe(400);
      expect((await t.ds.query(`SELECT count(*)::int AS n FROM "run"`))[0].n).toBe(before);
    });

    it('accepts its own tenantId, a scopeId and a callbackUrl, and keeps the callback with the run', async () => {
      const r = await post({ workflowId: 'conformance-noop', tenantId: 'default', scopeId: 'corr-1', callbackUrl: 'https://hooks.example.com/openwop/cb' });
      expect(r.status).toBe(201);
      const [row] = await t.ds.query(`SELECT "scope_id", "metadata" FROM "run" WHERE "id" = $1`, [r.body.runId]);
      expect(row.scope_id).toBe('corr-1');
      expect(row.metadata.callbackUrl).toBe('https://hooks.example.com/openwop/cb');
    });
  });

  describe('cancel', () => {
    it('answers 200 with the status on a run that already completed or was cancelled, and changes nothing', async () => {
      const done = await post({ workflowId: 'conformance-noop' });
      await waitForStatus(t, key, done.body.runId, ['completed']);
      const events = (await runEvents(t, key, done.body.runId)).length;
      const c = await cancel(done.body.runId, {}, { reason: 'late' });
      expect(c.status).toBe(200);
      expect(c.body.status).toBe('completed');
      expect((await runEvents(t, key, done.body.runId)).length).toBe(events);

      const live = await post({ workflowId: 'conformance-cancellable', inputs: { delayMs: 30_000 } });
      await waitForStatus(t, key, live.body.runId, ['running']);
      const first = await cancel(live.body.runId);
      expect(first.status).toBe(200);
      expect(['cancelling', 'cancelled']).toContain(first.body.status);
      await waitForStatus(t, key, live.body.runId, ['cancelled']);
      const again = await cancel(live.body.runId);
      expect(again.status).toBe(200);
      expect(again.body.status).toBe('cancelled');
    });

    it('honours Idempotency-Key: the recorded answer again, flagged; another run or body under the key is 409 idempotency_key_mismatch', async () => {
      const live = await post({ workflowId: 'conformance-cancellable', inputs: { delayMs: 30_000 } });
      await waitForStatus(t, key, live.body.runId, ['running']);
      const first = await cancel(live.body.runId, { 'idempotency-key': 'cancel-1' }, { reason: 'r' });
      expect(first.status).toBe(200);
      expect(first.headers['openwop-idempotent-replay']).toBe('false');
      await waitForStatus(t, key, live.body.runId, ['cancelled']);
      const replay = await cancel(live.body.runId, { 'idempotency-key': 'cancel-1' }, { reason: 'r' });
      expect(replay.status).toBe(200);
      expect(replay.headers['openwop-idempotent-replay']).toBe('true');
      expect(replay.body).toEqual(first.body);
      const otherBody = await cancel(live.body.runId, { 'idempotency-key': 'cancel-1' }, { reason: 'other' });
      expect(otherBody.status).toBe(409);
      expect(otherBody.body.error).toBe('idempotency_key_mismatch');
      const other = await post({ workflowId: 'conformance-noop' });
      const otherRun = await cancel(other.body.runId, { 'idempotency-key': 'cancel-1' }, { reason: 'r' });
      expect(otherRun.status).toBe(409);
      expect(otherRun.body.error).toBe('idempotency_key_mismatch');
      // A refusal that is not a final answer (404) is recorded as a terminal failure and replayed as such.
      const missing = await cancel('00000000-0000-4000-8000-000000000000', { 'idempotency-key': 'cancel-404' });
      expect(missing.status).toBe(404);
      const missingAgain = await cancel('00000000-0000-4000-8000-000000000000', { 'idempotency-key': 'cancel-404' });
      expect(missingAgain.status).toBe(404);
      expect(missingAgain.headers['openwop-idempotent-replay']).toBe('true');
    });
  });

  describe('the Layer-2 invocation log', () => {
    it('the concurrent-claim seam: five executors mint one identity and the effect is delivered once', async () => {
      const r = await t.http('POST', SEAM, { token: key, body: { executors: 5 } });
      expect(r.status).toBe(200);
      expect(r.body.attempted).toBe(5);
      expect(r.body.mintedIds).toHaveLength(5);
      expect(new Set(r.body.mintedIds).size).toBe(1);
      expect(r.body.delivered).toBe(1);
      expect(r.body.logicalInvocationId).toBe(logicalInvocationId({ tenant: 'default', runId: r.body.runId, nodeId: r.body.nodeId, ordinal: 0, providerKey: 'openwop-host:conformance-effect' }));
      const rows = await t.ds.query(`SELECT "state", "run_id" FROM "activity_invocation" WHERE "logical_invocation_id" = $1`, [r.body.logicalInvocationId]);
      expect(rows).toEqual([{ state: 'completed', run_id: r.body.runId }]);
      // Each call is a new run: a new identity.
      const again = await t.http('POST', SEAM, { token: key, body: { executors: 2 } });
      expect(again.body.logicalInvocationId).not.toBe(r.body.logicalInvocationId);
      expect(again.body.delivered).toBe(1);
      expect((await t.http('POST', SEAM, { token: key, body: { executors: 1 } })).status).toBe(400);
      expect((await t.http('POST', SEAM, { body: { executors: 2 } })).status).toBe(401);
    });

    it('a retry gets the persisted result without performing again; distinct effects of a node get distinct ordinals; a failure is persisted', async () => {
      const ledger = t.app.get(ActivityLedger);
      const base = { tenant: 'default', runId: 'run-ledger-1', nodeId: 'n' };
      let calls = 0;
      const attempt = () => {
        const effect = effectRunner(ledger, base);
        return Promise.all([effect('p:one', async () => ({ n: ++calls })), effect('p:one', async () => ({ n: ++calls }))]);
      };
      const first = await attempt();
      expect(calls).toBe(2); // two logical effects (ordinals 0 and 1), both performed
      const retry = await attempt();
      expect(calls).toBe(2); // the retry performs neither again
      expect(retry).toEqual(first);

      const failing = effectRunner(ledger, { ...base, nodeId: 'f' });
      await expect(failing('p:fail', async () => Promise.reject(Object.assign(new Error('card declined'), { code: 'declined' })))).rejects.toThrow('card declined');
      const retried = effectRunner(ledger, { ...base, nodeId: 'f' });
      let again = 0;
      await expect(retried('p:fail', async () => ++again)).rejects.toBeInstanceOf(ActivityFailedError);
      expect(again).toBe(0);
    });
  });

  describe('fixtures', () => {
    it('are advertised while the seams are on', async () => {
      const d = await t.http('GET', '/.well-known/openwop');
      expect(d.body.fixtures).toEqual(expect.arrayContaining(['conformance-idempotent', 'conformance-delay', 'conformance-cancellable', 'conformance-failure', 'conformance-multi-node']));
    });

    it('conformance-idempotent completes and carries its nonce', async () => {
      const r = await post({ workflowId: 'conformance-idempotent', inputs: { nonce: 'xyz' } });
      const done = await waitForStatus(t, key, r.body.runId, ['completed', 'failed']);
      expect(done.status).toBe('completed');
      expect(done.outputs).toEqual({ noop: { nonce: 'xyz' } });
    });

    it('conformance-delay stays running for inputs.delayMs, then completes', async () => {
      const started = Date.now();
      const r = await post({ workflowId: 'conformance-delay', inputs: { delayMs: 1500 } });
      await waitForStatus(t, key, r.body.runId, ['running']);
      await sleep(800);
      expect((await t.http('GET', `/v1/runs/${r.body.runId}`, { token: key })).body.status).toBe('running');
      const done = await waitForStatus(t, key, r.body.runId, ['completed', 'failed']);
      expect(done.status).toBe('completed');
      expect(Date.now() - started).toBeGreaterThanOrEqual(1500);
      expect(done.outputs).toEqual({ wait: { delayedMs: 1500 } });
    });

    it('conformance-cancellable takes inputs.delaySeconds and is cancelled mid-way', async () => {
      const r = await post({ workflowId: 'conformance-cancellable', inputs: { delaySeconds: 30 } });
      await waitForStatus(t, key, r.body.runId, ['running']);
      await sleep(300);
      const at = Date.now();
      expect((await cancel(r.body.runId)).status).toBe(200);
      const done = await waitForStatus(t, key, r.body.runId, ['cancelled', 'completed', 'failed'], 5000);
      expect(done.status).toBe('cancelled');
      expect(Date.now() - at).toBeLessThan(5000);
    });

    it('conformance-failure ends failed with a structured error', async () => {
      const r = await post({ workflowId: 'conformance-failure' });
      expect(r.status).toBe(201);
      const done = await waitForStatus(t, key, r.body.runId, ['completed', 'failed']);
      expect(done.status).toBe('failed');
      expect(done.error).toMatchObject({ code: expect.any(String), message: expect.any(String) });
    });

    it('conformance-multi-node runs a -> b -> c', async () => {
      const r = await post({ workflowId: 'conformance-multi-node' });
      const done = await waitForStatus(t, key, r.body.runId, ['completed', 'failed']);
      expect(done.status).toBe('completed');
      const completed = (await runEvents(t, key, r.body.runId)).filter((e) => e.type === 'node.completed').map((e) => e.nodeId);
      expect(completed).toEqual(['a', 'b', 'c']);
    });
  });
});

describe('runs: the concurrent-claim seam and the fixtures with the seams off', () => {
  let t: TestApp;
  afterAll(async () => {
    await t?.close();
  });

  it('the seam is not mounted and the fixtures are neither advertised nor resolved', async () => {
    t = await createTestApp();
    const key = await t.key({ scopes: ['runs:create', 'runs:read'] });
    expect((await t.http('POST', SEAM, { token: key, body: { executors: 2 } })).status).toBe(404);
    expect((await t.http('GET', '/.well-known/openwop')).body.fixtures).toBeUndefined();
    expect((await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'conformance-delay' } })).status).toBe(404);
  });
});
