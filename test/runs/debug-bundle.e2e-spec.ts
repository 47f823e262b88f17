/**
 * The run debug bundle (spec v1 debug-bundle.md): advertised, valid against the published schema,
 * its events the run's whole log (the same as /events/poll), eventCount = events.length, secret-free
 * (an input that is a credential reference never appears, neither in the run nor in run.started),
 * scoped like the run (another tenant's run and an unknown id are 404 alike), never cached.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { createTestApp, TestApp } from '../support/test-app';

const SCHEMA = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'schemas', 'openwop', 'debug-bundle.schema.json'), 'utf8'));
const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
const validate = ajv.compile(SCHEMA);

// A credential-reference-shaped value (built at run time so scanners do not flag this file).
const CANARY = ['cred', 'DEBUGBUNDLE-CANARY-never-in-a-bundle-X9Y8Z7'].join('_');

describe('run debug bundle', () => {
  let t: TestApp;
  let key: string;

  beforeAll(async () => {
    t = await createTestApp({ env: { OPENWOP_TEST_SEAMS: 'true' } });
    key = await t.key({ scopes: ['runs:create', 'runs:read'] });
  });

  afterAll(async () => {
    await t?.close();
  });

  async function finished(body: Record<string, unknown>): Promise<string> {
    const c = await t.http('POST', '/v1/runs', { token: key, body });
    expect(c.status).toBe(201);
    const runId = c.body.runId as string;
    for (let i = 0; i < 200; i++) {
      const r = await t.http('GET', `/v1/runs/${runId}`, { token: key });
      if (['completed', 'failed', 'cancelled'].includes(r.body.status)) return runId;
      await new Promise((res) => setTimeout(res, 50));
    }
    throw new TypeError(`run ${runId} did not finish`);
  }

  it('is advertised in the public discovery document', async () => {
    const d = await t.http('GET', '/.well-known/openwop');
    expect(d.body.debugBundle).toEqual({ supported: true });
  });

  it('answers a schema-valid, uncached bundle whose events are the run log, with no input value in it', async () => {
    const runId = await finished({ workflowId: 'conformance-noop', inputs: { userField: CANARY, nested: { deep: [CANARY] } } });
    const res = await t.http('GET', `/v1/runs/${runId}/debug-bundle`, { token: key });
    expect(res.status).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(validate(res.body)).toBe(true);
    expect(validate.errors ?? []).toEqual([]);
    expect(res.text).not.toContain(CANARY);
    const b = res.body;
    expect(b.run).toEqual(expect.objectContaining({ runId, workflowId: 'conformance-noop', status: 'completed' }));
    // The run is the snapshot GET /v1/runs/{runId} answers (no key beyond it).
    const snap = await t.http('GET', `/v1/runs/${runId}`, { token: key });
    expect(Object.keys(b.run).sort()).toEqual(Object.keys(snap.body).sort());
    expect([b.redactionApplied, b.redactionMode]).toEqual([true, 'mask']);
    const poll = await t.http('GET', `/v1/runs/${runId}/events/poll?timeout=0`, { token: key });
    expect(b.events.map((e: { sequence: number; type: string }) => [e.sequence, e.type])).toEqual(poll.body.events.map((e: { sequence: number; type: string }) => [e.sequence, e.type]));
    expect(b.metrics.eventCount).toBe(b.events.length);
    expect(b.events[0].type).toBe('run.started');
    // The shape of the data stays visible: the same keys, each string masked.
    expect(b.events[0].payload.inputs).toEqual({ userField: '[REDACTED]', nested: { deep: ['[REDACTED]'] } });
    expect(b.truncated).toBeUndefined();
  });

  it('keeps a failed run\'s error code and message for diagnosis', async () => {
    const runId = await finished({ workflowId: 'conformance-failure' });
    const b = (await t.http('GET', `/v1/runs/${runId}/debug-bundle`, { token: key })).body;
    expect(b.run.status).toBe('failed');
    expect(b.run.error).toEqual(expect.objectContaining({ code: expect.any(String), message: expect.any(String) }));
    expect(b.run.error.message).not.toBe('[REDACTED]');
    expect(validate(b)).toBe(true);
  });

  it('is 404 for an unknown run and for another tenant\'s run alike, and needs runs:read', async () => {
    const runId = await finished({ workflowId: 'conformance-noop' });
    const other = await t.key({ tenant: 'bundle-other', scopes: ['runs:read'] });
    const theirs = await t.http('GET', `/v1/runs/${runId}/debug-bundle`, { token: other });
    const unknown = await t.http('GET', '/v1/runs/00000000-0000-4000-8000-000000000000/debug-bundle', { token: key });
    expect([theirs.status, theirs.body.error]).toEqual([404, 'not_found']);
    expect([unknown.status, unknown.body.error]).toEqual([404, 'not_found']);
    const noScope = await t.key({ scopes: ['runs:create'] });
    expect((await t.http('GET', `/v1/runs/${runId}/debug-bundle`, { token: noScope })).status).toBe(403);
  });
});
