import { SchemaRegistry } from '../../src/platform/schemas/schema-registry';
import { EventLogService, HOST_STREAM } from '../../src/platform/events/event-log.service';
import { createTestApp, TestApp } from '../support/test-app';

const envelopeOk = (body: unknown) => expect(SchemaRegistry.shared().validate('error-envelope', body)).toEqual([]);

describe('HTTP pipeline, discovery and the event log', () => {
  let t: TestApp;
  let admin: string;

  beforeAll(async () => {
    t = await createTestApp({ env: { OPENWOP_MAX_BODY_BYTES: '4096' } });
    admin = await t.key({ roles: ['admin'] });
  });
  afterAll(() => t.close());

  describe('canonical errors', () => {
    it('answers an unknown route with the not_found envelope', async () => {
      const res = await t.http('GET', '/v1/does-not-exist', { token: admin });
      expect(res.status).toBe(404);
      expect(res.body.error).toBe('not_found');
      envelopeOk(res.body);
    });

    it('answers malformed JSON with 400 validation_error', async () => {
      const res = await t.http('POST', '/v1/keys', { token: admin, rawBody: '{"principal": ', headers: { 'content-type': 'application/json' } });
      expect(res.status).toBe(400);
      expect(res.body.error).toBe('validation_error');
      envelopeOk(res.body);
    });

    it('answers a body over the limit with 413 payload_too_large', async () => {
      const res = await t.http('POST', '/v1/keys', { token: admin, body: { principal: 'p', name: 'x'.repeat(8000) } });
      expect(res.status).toBe(413);
      expect(res.body.error).toBe('payload_too_large');
      envelopeOk(res.body);
    });

    it('answers an unsupported content type with 415', async () => {
      const res = await t.http('POST', '/v1/keys', { token: admin, rawBody: '<xml/>', headers: { 'content-type': 'application/xml' } });
      expect(res.status).toBe(415);
      expect(res.body.error).toBe('unsupported_media_type');
      envelopeOk(res.body);
    });

    it('lists the offending fields of an invalid body', async () => {
      const res = await t.http('POST', '/v1/keys', { token: admin, body: { principal: 'has spaces', unexpected: 1, scopes: 'nope' } });
      expect(res.status).toBe(400);
      expect(res.body.error).toBe('validation_error');
      const fields = (res.body.details.fields as string[]).join(' | ');
      expect(fields).toMatch(/principal/);
      expect(fields).toMatch(/unexpected/);
      expect(fields).toMatch(/scopes/);
      envelopeOk(res.body);
    });

    it('refuses a malformed query parameter', async () => {
      const res = await t.http('GET', '/v1/runs/host/events/poll?lastSequence=abc', { token: admin });
      expect(res.status).toBe(400);
      expect(res.body.error).toBe('validation_error');
      const tooLong = await t.http('GET', '/v1/runs/host/events/poll?timeout=999', { token: admin });
      expect(tooLong.status).toBe(400);
    });
  });

  describe('logs', () => {
    it('carry the request id and never the Authorization header', async () => {
      const res = await t.http('GET', '/v1/does-not-exist', { token: admin, headers: { 'x-request-id': 'trace-me-123' } });
      expect(res.status).toBe(404);
      const lines = t.logs.filter((l) => l.includes('trace-me-123'));
      expect(lines.length).toBeGreaterThan(0);
      for (const l of lines) expect(JSON.parse(l)).toEqual(expect.objectContaining({ reqId: 'trace-me-123' }));
      // owk_<lookup>_<secret>: the secret is base64url and may itself contain "_", so cut after the lookup.
      const secret = admin.slice(admin.indexOf('_', 'owk_'.length) + 1);
      expect(secret.length).toBeGreaterThanOrEqual(43);
      expect(t.logs.some((l) => l.includes(secret))).toBe(false);
    });
  });

  describe('discovery', () => {
    it('is public, validates against the published schema, and carries cache headers', async () => {
      const res = await t.http('GET', '/.well-known/openwop');
      expect(res.status).toBe(200);
      expect(SchemaRegistry.shared().validate('capabilities', res.body)).toEqual([]);
      expect(res.body.protocolVersion).toMatch(/^1\./);
      expect(res.body.limits.maxRequestBodyBytes).toBe(4096);
      expect(res.body.authorization).toEqual(expect.objectContaining({ supported: true, failClosed: true }));
      // Every capability family, and the limits, are also mirrored under the deprecated `capabilities` wrapper, equal to the root block.
      const families = Object.keys(res.body).filter((k) => !['protocolVersion', 'protocolVersions', 'preferredVersion', 'minClientVersion', 'supportedEnvelopes', 'schemaVersions', 'eventLogSchemaVersion', 'implementation', 'capabilities'].includes(k));
      expect(families).toEqual(expect.arrayContaining(['authorization', 'toolCatalog', 'connections', 'agents', 'portability']));
      expect(Object.keys(res.body.capabilities).sort()).toEqual([...families].sort());
      for (const f of families) expect(res.body.capabilities[f]).toEqual(res.body[f]);
      expect(res.body.capabilities.limits).toEqual(expect.objectContaining({ maxRunDurationMs: expect.any(Number), maxLoopIterations: expect.any(Number) }));
      expect(res.body.capabilities.protocolVersion).toBeUndefined();
      expect(res.body.schemaVersions).toEqual(expect.objectContaining({ 'error-envelope': 1, 'run-event': 1, 'tool-descriptor': 1, goal: 1, proposal: 1 }));
      expect(res.body.schemaVersions['goal-create-request']).toBeUndefined();
      expect(res.headers['cache-control']).toMatch(/max-age/);
      expect(res.headers.etag).toMatch(/^"[^"]+"$/);
    });

    it('answers 304 to a matching If-None-Match and 200 to a stale one', async () => {
      const first = await t.http('GET', '/.well-known/openwop');
      const again = await t.http('GET', '/.well-known/openwop', { headers: { 'if-none-match': String(first.headers.etag) } });
      expect(again.status).toBe(304);
      expect(again.text).toBe('');
      const stale = await t.http('GET', '/.well-known/openwop', { headers: { 'if-none-match': '"stale"' } });
      expect(stale.status).toBe(200);
    });

    it('serves the OpenAPI 3.1 document publicly', async () => {
      const res = await t.http('GET', '/v1/openapi.json');
      expect(res.status).toBe(200);
      expect(res.body.openapi).toMatch(/^3\.[1-9]/);
    });

    it('serves health and readiness', async () => {
      expect((await t.http('GET', '/healthz')).body).toEqual({ status: 'ok' });
      const ready = await t.http('GET', '/readyz');
      expect(ready.status).toBe(200);
      expect(ready.body.database).toBe('ok');
    });
  });

  describe('seams when off', () => {
    it('answer 404 even with a valid credential', async () => {
      const res = await t.http('GET', '/v1/host/sample/test/runs/__probe__/events', { token: admin });
      expect(res.status).toBe(404);
      expect(res.body.error).toBe('not_found');
    });

    it('answer 404 for a seam alias of a real route too, while the real route answers', async () => {
      for (const [method, path] of [['GET', '/v1/host/sample/goals'], ['POST', '/v1/host/sample/goals'], ['GET', '/v1/host/sample/proposals'], ['GET', '/v1/host/sample/export']] as const) {
        const res = await t.http(method, path, { token: admin, body: method === 'POST' ? {} : undefined });
        expect([path, res.status, res.body.error]).toEqual([path, 404, 'not_found']);
      }
      expect((await t.http('GET', '/v1/goals', { token: admin })).status).toBe(200);
    });
  });

  describe('event log', () => {
    it('keeps sequences gap-free under concurrent appends', async () => {
      const log = t.moduleRef.get(EventLogService);
      const scope = { tenant: 'concurrency' };
      await Promise.all(Array.from({ length: 40 }, (_, i) => log.append(scope, 'stream-1', 'test.appended', { i })));
      const events = await log.read(scope, 'stream-1');
      expect(events.map((e) => e.sequence)).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
      expect(new Set(events.map((e) => e.payload.i)).size).toBe(40);
    });

    it('long-polls the host stream and returns only events after lastSequence', async () => {
      const log = t.moduleRef.get(EventLogService);
      const key = await t.key({ tenant: 'poller', scopes: ['runs:read'] });
      await log.append({ tenant: 'poller' }, HOST_STREAM, 'goal.closed', { goalId: 'g1', finalState: 'satisfied' });
      const waiting = t.http('GET', '/v1/runs/host/events/poll?lastSequence=1&timeout=5', { token: key });
      await new Promise((r) => setTimeout(r, 200));
      await log.append({ tenant: 'poller' }, HOST_STREAM, 'goal.evaluated', { goalId: 'g1' });
      const res = await waiting;
      expect(res.status).toBe(200);
      expect(res.body.events.map((e: { type: string; sequence: number }) => [e.type, e.sequence])).toEqual([['goal.evaluated', 2]]);
      expect(res.body.lastSequence).toBe(2);
      for (const e of res.body.events) expect(SchemaRegistry.shared().validate('run-event', e)).toEqual([]);
    });

    it('never shows one tenant the events or runs of another', async () => {
      const log = t.moduleRef.get(EventLogService);
      await log.append({ tenant: 'tenant-a' }, HOST_STREAM, 'proposal.created', { proposalId: 'p' });
      await log.append({ tenant: 'tenant-a' }, 'a-run', 'x.y', {});
      const keyB = await t.key({ tenant: 'tenant-b', scopes: ['runs:read'] });
      const host = await t.http('GET', '/v1/runs/host/events/poll', { token: keyB });
      expect(host.body.events).toEqual([]);
      const run = await t.http('GET', '/v1/runs/a-run/events/poll', { token: keyB });
      expect(run.status).toBe(404);
      const keyA = await t.key({ tenant: 'tenant-a', scopes: ['runs:read'] });
      expect((await t.http('GET', '/v1/runs/a-run/events/poll', { token: keyA })).body.events).toHaveLength(1);
    });
  });

  describe('API keys over HTTP', () => {
    it('lists and revokes only keys of the caller’s tenant', async () => {
      const a = await t.key({ tenant: 'keys-a', scopes: ['keys:manage'] });
      const b = await t.key({ tenant: 'keys-b', scopes: ['keys:manage'] });
      const listA = await t.http('GET', '/v1/keys', { token: a });
      expect(listA.body.keys.every((k: { tenant: string }) => k.tenant === 'keys-a')).toBe(true);
      expect(JSON.stringify(listA.body)).not.toContain(/^owk_[a-z0-9]{12}_(.+)$/.exec(a)![1]); // the secret (base64url: it may hold `_`)
      const idA = listA.body.keys[0].id;
      const foreign = await t.http('DELETE', `/v1/keys/${idA}`, { token: b });
      expect(foreign.status).toBe(404);
      expect((await t.http('GET', '/v1/keys', { token: a })).status).toBe(200);
    });

    it('refuses to mint a key with scopes the creator does not hold', async () => {
      const k = await t.key({ scopes: ['keys:manage'] });
      const res = await t.http('POST', '/v1/keys', { token: k, body: { principal: 'bot', scopes: ['goals:write'] } });
      expect(res.status).toBe(403);
      expect(res.body.details.requiredScopes).toEqual(['goals:write']);
    });

    it('keeps a workspace-bound creator inside its workspace', async () => {
      const k = await t.key({ workspace: 'ws-1', scopes: ['keys:manage', 'runs:read'] });
      const other = await t.http('POST', '/v1/keys', { token: k, body: { principal: 'bot', workspace: 'ws-2', scopes: ['runs:read'] } });
      expect(other.status).toBe(403);
      const same = await t.http('POST', '/v1/keys', { token: k, body: { principal: 'bot', scopes: ['runs:read'] } });
      expect(same.status).toBe(201);
      expect(same.body.apiKey.workspace).toBe('ws-1');
    });

    it('mints a working key through the generated client', async () => {
      const api = t.api(admin);
      const created = await api.POST('/v1/keys', { body: { principal: 'sdk-bot', scopes: ['runs:read'] } });
      expect(created.response.status).toBe(201);
      const key = created.data!.key;
      const polled = await t.api(key).GET('/v1/runs/{runId}/events/poll', { params: { path: { runId: 'host' }, query: { lastSequence: 0 } } });
      expect(polled.response.status).toBe(200);
      expect(polled.data!.events).toEqual([]);
      const denied = await t.api(key).GET('/v1/keys');
      expect(denied.response.status).toBe(403);
      expect(denied.error).toEqual(expect.objectContaining({ error: 'forbidden' }));
    });
  });
});

describe('seams when on', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ env: { OPENWOP_TEST_SEAMS: 'true' } });
  });
  afterAll(() => t.close());

  it('require a credential', async () => {
    expect((await t.http('GET', '/v1/host/sample/test/runs/__probe__/events')).status).toBe(401);
    expect((await t.http('POST', '/v1/host/sample/test/reset')).status).toBe(401);
    expect((await t.http('GET', '/v1/host/sample/goals')).status).toBe(401);
  });

  it('serve a seam alias with the real handler: same answer, its scopes, the seam status', async () => {
    const reader = await t.key({ scopes: ['goals:read'] });
    const real = await t.http('GET', '/v1/goals', { token: reader });
    const seam = await t.http('GET', '/v1/host/sample/goals', { token: reader });
    expect([seam.status, seam.body]).toEqual([200, real.body]);
    expect((await t.http('POST', '/v1/host/sample/goals', { token: reader, body: {} })).status).toBe(403);
    const writer = await t.key({ scopes: ['goals:write'] });
    expect((await t.http('POST', '/v1/host/sample/goals', { token: writer, body: { unknown: true } })).status).toBe((await t.http('POST', '/v1/goals', { token: writer, body: { unknown: true } })).status);
  });

  it('answer 200 with an empty list for an unknown run id', async () => {
    const key = await t.key({ scopes: ['runs:read'] });
    const res = await t.http('GET', '/v1/host/sample/test/runs/__probe__/events', { token: key });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ events: [] });
  });

  it('filter events by type and correlation id, within the tenant', async () => {
    const log = t.moduleRef.get(EventLogService);
    await log.append({ tenant: 'default' }, 'r1', 'a.one', {}, { correlationId: 'c1' });
    await log.append({ tenant: 'default' }, 'r1', 'a.two', {}, { correlationId: 'c2' });
    await log.append({ tenant: 'other' }, 'r1', 'a.one', {});
    const key = await t.key({ scopes: ['runs:read'] });
    const res = await t.http('GET', '/v1/host/sample/test/runs/r1/events?type=a.one', { token: key });
    expect(res.body.events).toHaveLength(1);
    expect(res.body.events[0]).toEqual(expect.objectContaining({ type: 'a.one', correlationId: 'c1', sequence: 1, runId: 'r1' }));
    const reset = await t.http('POST', '/v1/host/sample/test/reset', { token: key });
    expect(reset.status).toBe(200);
    expect((await t.http('GET', '/v1/host/sample/test/runs/r1/events', { token: key })).body.events).toEqual([]);
    expect(await log.read({ tenant: 'other' }, 'r1')).toHaveLength(1);
  });
});
