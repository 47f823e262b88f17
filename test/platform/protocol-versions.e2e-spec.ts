/**
 * Protocol majors in one host (issue 37; spec v2 versioning.md §1, docs/versions.md): negotiation by
 * `OpenWOP-Version`, the response header and `Vary`, the discovery document's two representations,
 * `OpenWOP-Client-Version`, and operations run under both majors through the same handlers.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import Ajv2020 from 'ajv/dist/2020';
import { SCHEMAS_ROOT } from '../../src/platform/schemas/schema-registry';
import { waitForStatus } from '../runs/run-kit';
import { createTestApp, HttpResult, TestApp } from '../support/test-app';

const v2Schema = (name: string) => JSON.parse(fs.readFileSync(path.join(SCHEMAS_ROOT, 'openwop', 'v2', `${name}.schema.json`), 'utf8'));
const v2Envelope = new Ajv2020({ strict: false }).addSchema(v2Schema('ids')).compile(v2Schema('error-envelope'));
const v2EnvelopeOk = (body: unknown) => expect({ valid: v2Envelope(body), errors: v2Envelope.errors ?? null }).toEqual({ valid: true, errors: null });

/** The metadata keys of the closed v2 discovery root (capabilities.md §3); no family is advertised yet. */
const V2_METADATA = ['protocolVersion', 'protocolVersions', 'preferredVersion', 'extensions', 'implementation', 'engineVersion', 'eventLogSchemaVersion', 'configurable', 'observability', 'minClientVersion', 'runtimeCapabilities', 'testing', 'conformance', 'fixtures', 'compliance', 'discovery', 'signingKeys'];

const varyNames = (r: HttpResult) => String(r.headers.vary ?? '').split(',').map((s) => s.trim().toLowerCase());

describe('protocol majors: a host serving major 1 only (the default)', () => {
  let t: TestApp;
  let token: string;
  beforeAll(async () => {
    t = await createTestApp({ env: { OPENWOP_TEST_SEAMS: 'true' } });
    token = await t.key({ roles: ['admin'] });
  });
  afterAll(() => t?.close());

  it('lists only 1.0 in discovery, names the contract in OpenWOP-Version and varies on it', async () => {
    const r = await t.http('GET', '/.well-known/openwop');
    expect(r.status).toBe(200);
    expect(r.body).toEqual(expect.objectContaining({ protocolVersion: '1.0', protocolVersions: ['1.0'], preferredVersion: '1.0', minClientVersion: '1.0' }));
    // Metadata, not families: the deprecated capabilities wrapper does not mirror them.
    expect(r.body.capabilities.protocolVersions).toBeUndefined();
    expect(r.headers['openwop-version']).toBe('1.0');
    expect(varyNames(r)).toEqual(expect.arrayContaining(['authorization', 'openwop-version']));
    expect(r.headers['capabilities-etag']).toBe(r.headers.etag);
  });

  it.each(['2', '2.0', '9.0', 'banana'])('refuses OpenWOP-Version %s on an unversioned operation with 406, echoing the list', async (v) => {
    const r = await t.http('GET', '/.well-known/openwop', { headers: { 'openwop-version': v } });
    expect(r.status).toBe(406);
    expect(r.body).toEqual({ error: 'protocol_version_unsupported', message: expect.any(String), details: { protocolVersions: ['1.0'] } });
    expect(r.headers['openwop-version']).toBe('1.0');
  });

  it.each(['1', '1.0'])('serves OpenWOP-Version %s like no header', async (v) => {
    const plain = await t.http('GET', '/.well-known/openwop');
    const r = await t.http('GET', '/.well-known/openwop', { headers: { 'openwop-version': v } });
    expect(r.status).toBe(200);
    expect(r.text).toBe(plain.text);
  });

  it('refuses another major on a /v1 path with 400 protocol_version_mismatch', async () => {
    const r = await t.http('GET', '/v1/runs', { token, headers: { 'openwop-version': '2.0' } });
    expect(r.status).toBe(400);
    expect(r.body.error).toBe('protocol_version_mismatch');
    expect(r.headers['openwop-version']).toBe('1.0');
  });

  it('sends OpenWOP-Version on errors: a 404, a body-parser 400, a 401', async () => {
    for (const r of [
      await t.http('GET', '/v1/does-not-exist', { token }),
      await t.http('POST', '/v1/runs', { token, rawBody: '{', headers: { 'content-type': 'application/json' } }),
      await t.http('GET', '/v1/runs'),
    ]) {
      expect(r.status).toBeGreaterThanOrEqual(400);
      expect(r.headers['openwop-version']).toBe('1.0');
    }
  });

  it('keeps unversioned paths as they were while major 2 is not served', async () => {
    const r = await t.http('GET', '/runs', { token });
    expect(r.status).toBe(404);
  });

  it('sends no protocol header where there is no protocol: seams, health', async () => {
    const seam = await t.http('POST', '/v1/host/sample/test/surface', { token, body: {}, headers: { 'openwop-version': '2.0' } });
    expect(seam.body?.error).not.toBe('protocol_version_mismatch');
    expect(seam.headers['openwop-version']).toBeUndefined();
    const health = await t.http('GET', '/healthz', { headers: { 'openwop-version': '2.0' } });
    expect(health.status).toBe(200);
    expect(health.headers['openwop-version']).toBeUndefined();
  });
});

describe('protocol majors: a host serving majors 1 and 2 (OPENWOP_PROTOCOL_MAJORS=1,2)', () => {
  let t: TestApp;
  let token: string;
  beforeAll(async () => {
    t = await createTestApp({ env: { OPENWOP_TEST_SEAMS: 'true', OPENWOP_PROTOCOL_MAJORS: '1,2' } });
    token = await t.key({ roles: ['admin'] });
  });
  afterAll(() => t?.close());

  /** One case under both majors: `/v1/<op>` header-less, and `/<op>` with OpenWOP-Version: 2.0. */
  const both = async (method: string, op: string, opts: Parameters<TestApp['http']>[2] = {}) => ({
    1: await t.http(method, `/v1${op}`, opts),
    2: await t.http(method, op, { ...opts, headers: { ...(opts.headers ?? {}), 'openwop-version': '2.0' } }),
  });

  it('header-less discovery is the v1 document listing both majors, preferring 1.0', async () => {
    const r = await t.http('GET', '/.well-known/openwop');
    expect(r.body).toEqual(expect.objectContaining({ protocolVersion: '1.0', protocolVersions: ['1.0', '2.0'], preferredVersion: '1.0', minClientVersion: '1.0' }));
    expect(r.body.capabilities).toBeDefined();
    expect(r.headers['openwop-version']).toBe('1.0');
  });

  it('OpenWOP-Version 2 and 2.0 get the closed v2 root: same list, another body, its own ETag, no Capabilities-Etag', async () => {
    const v1 = await t.http('GET', '/.well-known/openwop');
    const a = await t.http('GET', '/.well-known/openwop', { headers: { 'openwop-version': '2' } });
    const b = await t.http('GET', '/.well-known/openwop', { headers: { 'openwop-version': '2.0' } });
    expect(a.status).toBe(200);
    expect(a.text).toBe(b.text);
    expect(a.text).not.toBe(v1.text);
    expect(a.headers['openwop-version']).toBe('2.0');
    expect(varyNames(a)).toContain('openwop-version');
    expect(a.body.protocolVersions).toEqual(v1.body.protocolVersions);
    expect(a.body.preferredVersion).toBe('1.0');
    expect(a.body.protocolVersion).toBe('1.0');
    // Beside the metadata, only the family records the host serves at major 2 (V2_RECORDS), e.g. mcp with the mount on.
    expect(Object.keys(a.body).filter((k) => !V2_METADATA.includes(k))).toEqual(expect.arrayContaining(['interrupt', 'mcp', 'replay']));
    for (const k of Object.keys(a.body).filter((k) => !V2_METADATA.includes(k))) expect(a.body[k]).toMatchObject({ status: expect.any(String), since: '2.0', witness: expect.any(String) });
    expect(a.body.mcp).toMatchObject({ status: 'experimental', since: '2.0', revisions: ['2026-07-28'] });
    expect(a.body.mcp.supported).toBeUndefined();
    for (const removed of ['capabilities', 'profiles', 'supportedTransports', 'grpc', 'limits', 'schemaVersions']) expect(a.body[removed]).toBeUndefined();
    expect(a.headers['capabilities-etag']).toBeUndefined();
    expect(a.headers.etag).toMatch(/^"[^"]+"$/);
    expect(a.headers.etag).not.toBe(v1.headers.etag);
    const again = await t.http('GET', '/.well-known/openwop', { headers: { 'openwop-version': '2.0', 'if-none-match': String(a.headers.etag) } });
    expect(again.status).toBe(304);
    expect(again.text).toBe('');
    expect(again.headers['openwop-version']).toBe('2.0');
    // The v1 ETag does not match the v2 representation.
    const other = await t.http('GET', '/.well-known/openwop', { headers: { 'openwop-version': '2.0', 'if-none-match': String(v1.headers.etag) } });
    expect(other.status).toBe(200);
  });

  it('refuses an unlisted major with 406 echoing both, and 2.0 on /v1 with 400', async () => {
    const r = await t.http('GET', '/runs', { token, headers: { 'openwop-version': '9.0' } });
    expect(r.status).toBe(406);
    expect(r.body.details.protocolVersions).toEqual(['1.0', '2.0']);
    const m = await t.http('GET', '/v1/openapi.json', { headers: { 'openwop-version': '2.0' } });
    expect(m.status).toBe(400);
    expect(m.body.error).toBe('protocol_version_mismatch');
  });

  it('a run created under either major is read, polled and cancelled under the other through the same handlers', async () => {
    const created = await both('POST', '/runs', { token, body: { workflowId: 'conformance-noop', inputs: {} } });
    expect([created[1].status, created[2].status]).toEqual([201, 201]);
    expect(created[1].headers['openwop-version']).toBe('1.0');
    expect(created[2].headers['openwop-version']).toBe('2.0');
    // Major 2 hands out the tenant-bound id; the run behind it is the bare id /v1 knows.
    const bare1 = created[1].body.runId as string;
    const bound2 = created[2].body.runId as string;
    expect(bound2).toMatch(/^default\/[A-Za-z0-9._~-]{16,128}$/);
    const bare2 = bound2.slice('default/'.length);
    expect(created[2].body.eventsUrl).toBe(`/runs/default~2F${bare2}/events`);
    for (const [bare, readAt] of [[bare1, 2], [bare2, 1]] as const) {
      await waitForStatus(t, token, bare, ['completed']);
      const headers: Record<string, string> = readAt === 2 ? { 'openwop-version': '2.0' } : {};
      const urls = readAt === 2 ? [`/runs/default~2F${bare}`, `/runs/default%2F${bare}`, `/runs/${bare}`] : [`/v1/runs/${bare}`];
      for (const url of urls) {
        const read = await t.http('GET', url, { token, headers });
        expect(read.status).toBe(200);
        expect(read.body.runId).toBe(readAt === 2 ? `default/${bare}` : bare);
        expect(read.headers['openwop-version']).toBe(`${readAt}.0`);
      }
      const poll = await t.http('GET', `${urls[0]}/events/poll`, { token, headers });
      expect(poll.status).toBe(200);
      expect(poll.body.events.map((e: { type: string }) => e.type)).toContain('run.completed');
      expect(new Set(poll.body.events.map((e: { runId: string }) => e.runId))).toEqual(new Set([readAt === 2 ? `default/${bare}` : bare]));
      // Cancelling a finished run: v1 answers the run as it ended, v2 refuses it 409 run_terminal (the same handler).
      const cancel = await t.http('POST', `${urls[0]}/cancel`, { token, headers, body: {} });
      if (readAt === 1) {
        expect(cancel.status).toBe(200);
        expect(cancel.body.runId).toBe(bare);
      } else {
        expect(cancel.status).toBe(409);
        expect(cancel.body).toEqual({ error: 'run_terminal', message: expect.any(String), details: { runStatus: 'completed' } });
        v2EnvelopeOk(cancel.body);
      }
      expect(cancel.headers['openwop-version']).toBe(`${readAt}.0`);
      // Pause and resume of a finished run: v2 names the refusal run_terminal.
      const resume = await t.http('POST', `${urls[0]}:resume`, { token, headers, body: {} });
      expect(resume.status).toBe(409);
      expect(resume.body.error).toBe(readAt === 2 ? 'run_terminal' : 'run_not_paused');
    }
    // v1 answers keep the bare id.
    expect((await t.http('GET', `/v1/runs/${bare2}`, { token })).body.runId).toBe(bare2);
    const list = await t.http('GET', '/runs', { token, headers: { 'openwop-version': '2.0' } });
    expect(list.status).toBe(200);
    const ids = JSON.stringify(list.body);
    expect(ids).toContain(`"default/${bare1}"`);
    expect(ids).not.toContain(`"${bare1}"`);
  });

  it('a bulk cancel under major 2 takes bound ids, answers them in request order, and never touches a foreign id', async () => {
    const v2 = { 'openwop-version': '2.0' };
    const own = await t.http('POST', '/runs', { token, body: { workflowId: 'conformance-noop', inputs: {} }, headers: v2 });
    const bound = own.body.runId as string;
    const bare = bound.split('/')[1];
    // The caller's own run behind another tenant's name: must not be cancelled through it.
    const foreign = `stranger/${bare}`;
    const r = await t.http('POST', '/runs:bulk-cancel', { token, body: { runIds: [bound, foreign] }, headers: v2 });
    expect(r.status).toBe(200);
    expect(r.body.results.map((e: { runId: string }) => e.runId)).toEqual([bound, foreign]);
    expect(r.body.results[0].ok === true || r.body.results[0].error?.error === 'run_terminal').toBe(true);
    expect(r.body.results[1]).toEqual(expect.objectContaining({ ok: false }));
    expect(r.body.results[1].error.error).toBe('not_found');
  });

  it('a tenant-bound id naming another tenant is refused 403 id_tenant_mismatch', async () => {
    const created = await t.http('POST', '/runs', { token, body: { workflowId: 'conformance-noop', inputs: {} }, headers: { 'openwop-version': '2.0' } });
    const bare = (created.body.runId as string).split('/')[1];
    const r = await t.http('GET', `/runs/stranger~2F${bare}`, { token, headers: { 'openwop-version': '2.0' } });
    expect(r.status).toBe(403);
    expect(r.body.error).toBe('id_tenant_mismatch');
    v2EnvelopeOk(r.body);
  });

  it('errors under major 2 are the closed v2 envelope with a registered or vendor code, and carry OpenWOP-Version', async () => {
    const missing = await both('GET', '/runs/does-not-exist', { token });
    expect([missing[1].status, missing[2].status]).toEqual([404, 404]);
    expect(missing[2].body.error).toBe('not_found');
    expect(missing[2].headers['openwop-version']).toBe('2.0');
    v2EnvelopeOk(missing[2].body);
    const malformed = await both('POST', '/runs', { token, rawBody: '{', headers: { 'content-type': 'application/json' } });
    expect([malformed[1].status, malformed[2].status]).toEqual([400, 400]);
    expect(malformed[2].body.error).toBe('validation_error');
    expect(malformed[2].headers['content-type']).toMatch(/^application\/json/);
    expect(malformed[2].headers['openwop-version']).toBe('2.0');
    v2EnvelopeOk(malformed[2].body);
    const anonymous = await t.http('GET', '/runs', { headers: { 'openwop-version': '2.0' } });
    expect(anonymous.status).toBe(401);
    v2EnvelopeOk(anonymous.body);
  });

  it('answers the framework writes before routing (a path that does not decode, an over-long parameter) name their contract too', async () => {
    for (const op of ['/runs/%ud800', `/runs/${'x'.repeat(9000)}`]) {
      const r = await both('GET', op, { token });
      expect([r[1].status, r[2].status]).toEqual(op.includes('%') ? [400, 400] : [414, 414]);
      expect([r[1].headers['openwop-version'], r[2].headers['openwop-version']]).toEqual(['1.0', '2.0']);
      expect(varyNames(r[1])).toContain('openwop-version');
      v2EnvelopeOk(r[2].body);
    }
    // No major, no header: a seam path that does not decode.
    const seam = await t.http('GET', '/conformance/seams/%ud800', { token });
    expect(seam.status).toBe(400);
    expect(seam.headers['openwop-version']).toBeUndefined();
  });

  it('an operation of a family the v2 root does not list is 404 not_found under major 2, and still served under /v1', async () => {
    // (/tools, /openapi.json and /webhooks are served at major 2 now: test/tool-catalog/tool-catalog-v2.e2e-spec.ts,
    // test/platform/openapi-v2.e2e-spec.ts, test/webhooks/webhooks-v2.e2e-spec.ts.)
    // The prompts family: its /v1 twin is /v1/prompt-templates.
    for (const [method, op, v1] of [['GET', '/prompts', '/v1/prompt-templates']] as const) {
      const r = { 1: await t.http(method, v1, { token }), 2: await t.http(method, op, { token, headers: { 'openwop-version': '2.0' } }) };
      expect(r[1].status).not.toBe(404);
      expect(r[2].status).toBe(404);
      expect(r[2].body.error).toBe('not_found');
      expect(r[2].headers['openwop-version']).toBe('2.0');
    }
  });

  it('a header-less unversioned operation is served under the preferred major, 1', async () => {
    const r = await t.http('GET', '/runs', { token });
    expect(r.status).toBe(200);
    expect(r.headers['openwop-version']).toBe('1.0');
    expect(r.text).toBe((await t.http('GET', '/v1/runs', { token })).text);
  });

  it.each([
    ['1.0', 200],
    ['1.0.0', 200],
    ['1.0.99', 200],
    ['2.3', 200],
    ['1', 200],
    ['01.0', 200],
    ['1.0-rc.1', 200],
    ['0.0.1', 426],
    ['0.9', 426],
  ])('OpenWOP-Client-Version %s under major 2 → %i', async (v, status) => {
    const r = await t.http('GET', '/runs', { token, headers: { 'openwop-version': '2.0', 'openwop-client-version': v } });
    expect(r.status).toBe(status);
    if (status === 426) {
      expect(r.body).toEqual({ error: 'client_version_unsupported', message: expect.any(String), details: { minClientVersion: '1.0' } });
      v2EnvelopeOk(r.body);
    }
  });

  it('major 2 reads the OpenWOP-* request headers where v1 reads X-*, and ignores the v1 names', async () => {
    const v2 = { 'openwop-version': '2.0' };
    const body = { workflowId: 'conformance-noop', inputs: {} };
    const forced = await t.http('POST', '/runs', { token, body, headers: { ...v2, 'openwop-force-engine-version': '2' } });
    expect(forced.status).toBe(403);
    expect(forced.body.error).toBe('force_engine_version_forbidden');
    v2EnvelopeOk(forced.body);
    const dedup = await t.http('POST', '/runs', { token, body, headers: { ...v2, 'openwop-dedup': 'enforce' } });
    expect(dedup.status).toBe(400);
    expect(dedup.body.error).toBe('validation_error');
    const v1Names = await t.http('POST', '/runs', { token, body, headers: { ...v2, 'x-force-engine-version': '2', 'x-dedup': 'enforce' } });
    expect(v1Names.status).toBe(201);
    // On /v1 the v1 names keep their meaning.
    const v1 = await t.http('POST', '/v1/runs', { token, body, headers: { 'x-force-engine-version': '2' } });
    expect(v1.status).toBe(403);
  });

  it('major 2 holds Idempotency-Key to its grammar (22-128 characters); v1 keeps accepting what it did', async () => {
    const body = { workflowId: 'conformance-noop', inputs: {} };
    const short = await t.http('POST', '/runs', { token, body, headers: { 'openwop-version': '2.0', 'idempotency-key': 'too-short' } });
    expect(short.status).toBe(400);
    expect(short.body.error).toBe('idempotency_key_invalid');
    v2EnvelopeOk(short.body);
    const ok = await t.http('POST', '/runs', { token, body, headers: { 'openwop-version': '2.0', 'idempotency-key': 'a-key-of-twenty-two-chars' } });
    expect(ok.status).toBe(201);
    const v1 = await t.http('POST', '/v1/runs', { token, body, headers: { 'idempotency-key': 'too-short' } });
    expect(v1.status).toBe(201);
  });

  it('a client version never refuses a v1 request', async () => {
    const r = await t.http('GET', '/v1/runs', { token, headers: { 'openwop-client-version': '0.0.1' } });
    expect(r.status).toBe(200);
  });
});
