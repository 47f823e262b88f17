import * as fs from 'node:fs';
import * as path from 'node:path';
import Ajv2020 from 'ajv/dist/2020';
import { createTestApp, TestApp } from '../support/test-app';

const v2Schema = JSON.parse(fs.readFileSync(path.resolve(__dirname, '../../schemas/openwop/v2/tool-descriptor.schema.json'), 'utf8'));
const validV2 = new Ajv2020({ strict: false, allErrors: true }).compile(v2Schema);
const V2 = { 'OpenWOP-Version': '2' };

type Descriptor = Record<string, any>;

/** RFC 0204 §D.12, row by row. */
const expected = (d: Descriptor) => ({
  readOnlyHint: d.safetyTier === 'pure' || d.safetyTier === 'read',
  destructiveHint: d.safetyTier === 'write' || d.safetyTier === 'exec',
  idempotentHint: d.replayPolicy === 'deterministic' || d.replayPolicy === 'idempotent',
  openWorldHint: d.egress !== 'none',
});

/** The tool catalog under both majors (issue 37 item 3): one handler, the v2 descriptor at major 2, v1 unchanged. */
describe('tool catalog at major 2 (RFC 0204 annotations)', () => {
  let t: TestApp;
  let reader: string;

  beforeAll(async () => {
    t = await createTestApp({
      env: { OPENWOP_PROTOCOL_MAJORS: '1,2' },
      configFile: {
        tools: {
          hostExtensions: [
            { toolId: 'x-host-acme-exec', title: 'Shell', safetyTier: 'exec', egress: 'host-owned', replayPolicy: 'non-deterministic' },
            { toolId: 'x-host-acme-lookup', safetyTier: 'read', egress: 'safe-fetch', replayPolicy: 'idempotent' },
            { toolId: 'x-host-acme-write', safetyTier: 'write' },
            { toolId: 'x-host-acme-hidden', safetyTier: 'read', auth: { scopes: ['tools:acme:admin'] } },
          ],
        },
      },
    });
    reader = await t.key({ scopes: ['tools:read'] });
  });

  afterAll(async () => {
    await t?.close();
  });

  it('GET /tools at major 2: the v1 descriptors, same order, each with the four hints derived from its host-assigned fields, valid against the v2 schema', async () => {
    const v1 = await t.http('GET', '/v1/tools', { token: reader });
    const v2 = await t.http('GET', '/tools', { token: reader, headers: V2 });
    expect(v2.status).toBe(200);
    expect(v2.headers['openwop-version']).toBe('2.0');
    expect(Array.isArray(v2.body)).toBe(true);
    const ids = v2.body.map((d: Descriptor) => d.toolId);
    expect(ids).toEqual([...ids].sort((a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)));
    expect(ids).toEqual(expect.arrayContaining(['x-host-acme-exec', 'x-host-acme-lookup', 'x-host-acme-write', 'x-host-openwop-echo']));
    expect(ids).not.toContain('x-host-acme-hidden');
    for (const d of v2.body as Descriptor[]) {
      expect(d.annotations).toEqual(expected(d));
      expect(validV2(d)).toBe(true);
    }
    expect(v2.body.map(({ annotations: _a, ...rest }: Descriptor) => rest)).toEqual(v1.body);
    const byId = Object.fromEntries((v2.body as Descriptor[]).map((d) => [d.toolId, d.annotations]));
    expect(byId['x-host-acme-exec']).toEqual({ readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true });
    expect(byId['x-host-acme-lookup']).toEqual({ readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: true });
    expect(byId['x-host-acme-write']).toEqual({ readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true });
    expect(byId['x-host-openwop-echo']).toEqual({ readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false });
  });

  it('v1 answers stay as they were: no annotations, the same bytes before and after a v2 read, an ETag per major', async () => {
    const before = await t.http('GET', '/v1/tools', { token: reader });
    await t.http('GET', '/tools', { token: reader, headers: V2 });
    const after = await t.http('GET', '/v1/tools', { token: reader });
    expect(after.text).toBe(before.text);
    expect(after.text).not.toContain('annotations');
    expect((await t.http('GET', '/v1/tools/x-host-acme-exec', { token: reader })).body.annotations).toBeUndefined();
    const v2 = await t.http('GET', '/tools', { token: reader, headers: V2 });
    expect(v2.headers.etag).not.toBe(after.headers.etag);
    const cached = await t.http('GET', '/tools', { token: reader, headers: { ...V2, 'If-None-Match': String(v2.headers.etag) } });
    expect(cached.status).toBe(304);
    expect(cached.headers['openwop-version']).toBe('2.0');
  });

  it('GET /tools/{toolId} at major 2 is the v2 descriptor; an unknown or hidden id is 404 not_found in the v2 envelope', async () => {
    const one = await t.http('GET', '/tools/x-host-acme-lookup', { token: reader, headers: V2 });
    expect(one.status).toBe(200);
    expect(one.body).toEqual({ ...(await t.http('GET', '/v1/tools/x-host-acme-lookup', { token: reader })).body, annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: true } });
    for (const id of ['x-host-acme-hidden', 'x-host-acme-nope']) {
      const r = await t.http('GET', `/tools/${id}`, { token: reader, headers: V2 });
      expect(r.status).toBe(404);
      expect(r.body).toEqual({ error: 'not_found', message: expect.any(String) });
    }
    expect((await t.http('GET', '/tools', { headers: V2 })).status).toBe(401);
  });

  it('the compact view is the same at both majors (no annotations)', async () => {
    const v1 = await t.http('GET', '/v1/tools?view=compact', { token: reader });
    const v2 = await t.http('GET', '/tools?view=compact', { token: reader, headers: V2 });
    expect(v2.status).toBe(200);
    expect(v2.text).toBe(v1.text);
    expect(v2.text).not.toContain('annotations');
    const one = await t.http('GET', '/tools/x-host-acme-exec?view=compact', { token: reader, headers: V2 });
    expect(one.body.annotations).toBeUndefined();
  });

  it('the v2 root lists the toolCatalog record', async () => {
    const root = await t.http('GET', '/.well-known/openwop', { headers: V2 });
    expect(root.body.toolCatalog).toMatchObject({ status: 'experimental', since: '2.0', witness: 'witnessable-gated', compactView: true, sessionLifecycle: true });
    expect(root.body.toolCatalog.supported).toBeUndefined();
    expect(root.body.toolCatalog.sources).toContain('host-extension');
  });
});
