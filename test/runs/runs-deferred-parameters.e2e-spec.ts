/**
 * RFC 0124 deferred chain parameters through real runs: the author value is the default, a per-run `configurable`
 * override (by bare name) is what the prompt slot composes with, a fork replays the same binding, a sensitive
 * parameter composes only as a redacted credential reference; RFC 0136 `format` on the minted variables.
 */
import { createTestApp, TestApp } from '../support/test-app';
import { runEvents, waitForStatus } from './run-kit';

describe('runs: deferred chain parameters', () => {
  let t: TestApp;
  let key: string;
  const seam = (body: Record<string, unknown>) => t.http('POST', '/v1/host/sample/chain/deferred-expand', { token: key, body });

  beforeAll(async () => {
    t = await createTestApp({ env: { OPENWOP_TEST_SEAMS: 'true' } });
    key = await t.key({ scopes: ['runs:create', 'runs:read'] });
  });

  afterAll(async () => {
    await t?.close();
  });

  it('advertises workflowChainPacks.deferredParameters', async () => {
    const d = await t.http('GET', '/.well-known/openwop');
    expect(d.body.workflowChainPacks.deferredParameters).toEqual({ supported: true });
  });

  it('an override changes the bound value, the fork replays it, the slot composes as untrusted content', async () => {
    const r = await seam({ chainId: 'conformance.deferred', params: { topic: 'default-topic' }, override: { topic: 'run-topic' }, fork: true });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ resolved: 'run-topic', forkResolved: 'run-topic', contentTrust: 'untrusted' });
    expect(r.body.forkRunId).not.toBe(r.body.runId);
    const run = await waitForStatus(t, key, r.body.runId, ['completed']);
    expect(run.outputs.compose.systemPrompt).toBe('Write a short note about <UNTRUSTED>run-topic</UNTRUSTED>.');
    // The run's variables show the override over the author default; the fork inherits the configurable.
    expect(run.variables.topic).toBe('run-topic');
    const fork = await waitForStatus(t, key, r.body.forkRunId, ['completed']);
    expect([fork.configurable.topic, fork.variables.topic]).toEqual(['run-topic', 'run-topic']);
    // Without an override the author value is bound.
    const plain = await seam({ chainId: 'conformance.deferred' });
    expect(plain.body).toMatchObject({ resolved: 'default-topic', contentTrust: 'untrusted' });
    expect(plain.body.forkResolved).toBeUndefined();
  });

  it('POST /v1/runs takes the override by bare name and checks its type', async () => {
    const ok = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'conformance.deferred', configurable: { topic: 'from-rest' } } });
    const done = await waitForStatus(t, key, ok.body.runId, ['completed', 'failed']);
    expect(done.outputs.compose.variableBindings).toEqual({ topic: 'from-rest' });
    const bad = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'conformance.deferred', configurable: { topic: 42 } } });
    expect([bad.status, bad.body.error, bad.body.details.field]).toEqual([400, 'validation_error', 'configurable.topic']);
  });

  it('a branch may override a deferred parameter in its overlay, checked as at create', async () => {
    const source = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'conformance.deferred' } });
    await waitForStatus(t, key, source.body.runId, ['completed']);
    const branch = await t.http('POST', `/v1/runs/${source.body.runId}:fork`, { token: key, body: { fromSeq: 0, mode: 'branch', runOptionsOverlay: { configurable: { topic: 'what-if' } } } });
    expect(branch.status).toBe(201);
    expect((await waitForStatus(t, key, branch.body.runId, ['completed'])).outputs.compose.variableBindings).toEqual({ topic: 'what-if' });
    const bad = await t.http('POST', `/v1/runs/${source.body.runId}:fork`, { token: key, body: { fromSeq: 0, mode: 'branch', runOptionsOverlay: { configurable: { topic: ['x'] } } } });
    expect([bad.status, bad.body.error, bad.body.details.field]).toEqual([400, 'validation_error', 'configurable.topic']);
  });

  it('a sensitive parameter composes as [REDACTED:<credentialRef>] and takes only a reference', async () => {
    const r = await seam({ chainId: 'conformance.deferred-sensitive', sensitiveParam: 'apiKey', credentialRef: 'cred-123' });
    expect(r.status).toBe(200);
    expect(r.body.composed).toBe('Use the key [REDACTED:cred-123] to look up <UNTRUSTED>billing</UNTRUSTED>.');
    const events = JSON.stringify(await runEvents(t, key, r.body.runId));
    expect(events).toContain('[REDACTED:cred-123]');
    expect(events).not.toContain('{{apiKey}}');
    // A value instead of a reference is refused before anything runs.
    const plaintext = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'conformance.deferred-sensitive', configurable: { apiKey: 'sk live plaintext' } } });
    expect([plaintext.status, plaintext.body.details.field]).toEqual([400, 'configurable.apiKey']);
    const notSensitive = await seam({ chainId: 'conformance.deferred-sensitive', sensitiveParam: 'topic', credentialRef: 'cred-1' });
    expect([notSensitive.status, notSensitive.body.details.field]).toEqual([400, 'sensitiveParam']);
  });

  it('expands a chain: variables carry format for string parameters only, verbatim', async () => {
    const r = await seam({
      chain: {
        parameters: { type: 'object', properties: { email: { type: 'string', format: 'email' }, note: { type: 'string', format: 'vendor.acme.freeform' }, count: { type: 'number', format: 'float' } } },
      },
    });
    expect(r.status).toBe(200);
    expect(r.body.variables).toEqual([
      { name: 'email', type: 'string', format: 'email' },
      { name: 'note', type: 'string', format: 'vendor.acme.freeform' },
      { name: 'count', type: 'number' },
    ]);
    const refused = await seam({ chain: { parameters: { properties: { k: { type: 'string', 'x-openwop-sensitive': true } } }, dag: { nodes: [{ id: 'n', typeId: 'core.noop', inputs: { k: '{{params.k}}' } }] } } });
    expect([refused.status, refused.body.error]).toEqual([422, 'sensitive_param_not_deferrable']);
  });

  it('refuses malformed bodies and unknown seam chains', async () => {
    for (const [body, status] of [
      [{}, 400],
      [{ chainId: 7 }, 400],
      [{ chainId: 'conformance.deferred', fork: 'yes' }, 400],
      [{ chainId: 'conformance.deferred', override: 'x' }, 400],
      [{ chain: {}, chainId: 'conformance.deferred' }, 400],
      [{ chainId: 'conformance.deferred', params: { topic: 'other' } }, 422],
      [{ chainId: 'no.such.chain' }, 404],
    ] as const) {
      const r = await seam(body as Record<string, unknown>);
      expect([JSON.stringify(body), r.status]).toEqual([JSON.stringify(body), status]);
      expect(typeof r.body.error).toBe('string');
    }
  });

  it('a variable whose default is off its advisory format still completes (RFC 0136)', async () => {
    const r = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'conformance-workflow-variable-format-advisory' } });
    expect((await waitForStatus(t, key, r.body.runId, ['completed', 'failed'])).status).toBe('completed');
  });
});
