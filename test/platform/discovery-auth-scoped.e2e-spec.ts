/** Auth-scoped discovery (RFC 0011, same-endpoint): the authenticated view narrows to what the credential may use. */
import { randomBytes } from 'node:crypto';
import { withoutUnusable } from '../../src/platform/discovery/discovery.service';
import { SchemaRegistry } from '../../src/platform/schemas/schema-registry';
import { createTestApp, TestApp } from '../support/test-app';

const CORE = ['protocolVersion', 'supportedEnvelopes', 'schemaVersions', 'limits'];
const FAMILIES = ['toolCatalog', 'connections', 'credentials', 'portability', 'webhooks'];

describe('discovery: auth-scoped views', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ env: { OPENWOP_CREDENTIAL_KEYS: `k1:${randomBytes(32).toString('base64')}` } });
  });
  afterAll(async () => t?.close());

  const get = (token?: string, headers: Record<string, string> = {}) => t.http('GET', '/.well-known/openwop', { token, headers });

  it('advertises discovery.authScoped and the anonymous view stays whole and public', async () => {
    const anon = await get();
    expect(anon.status).toBe(200);
    expect(anon.body.discovery).toEqual({ authScoped: { supported: true, mode: 'same-endpoint' } });
    for (const f of FAMILIES) expect(anon.body[f]).toBeDefined();
    expect(anon.body.agents.proposals).toBeDefined();
    expect(anon.body.agents.goals).toBeDefined();
    expect(anon.headers['cache-control']).toBe('public, max-age=300');
    // The representation also varies on the protocol major asked for (docs/versions.md).
    expect(anon.headers.vary).toBe('Authorization, OpenWOP-Version');
    expect(SchemaRegistry.shared().validate('capabilities', anon.body)).toEqual([]);
  });

  it('a narrow credential sees only the blocks it can use; a broad one sees them all; both keep the core fields', async () => {
    const low = await t.key({ scopes: ['runs:read'] });
    const tools = await t.key({ scopes: ['tools:read', 'goals:read'] });
    const admin = await t.key({ roles: ['admin'] });
    const anon = (await get()).body;
    const lowView = await get(low);
    expect(lowView.status).toBe(200);
    expect(lowView.headers['cache-control']).toBe('private, max-age=300');
    for (const k of CORE) expect(lowView.body[k]).toEqual(anon[k]);
    for (const f of FAMILIES) expect(lowView.body[f]).toBeUndefined();
    expect(lowView.body.agents).toBeUndefined();
    expect(lowView.body.capabilities.toolCatalog).toBeUndefined();
    expect(lowView.body.discovery).toEqual(anon.discovery);
    expect(SchemaRegistry.shared().validate('capabilities', lowView.body)).toEqual([]);

    const toolsView = (await get(tools)).body;
    expect(toolsView.toolCatalog).toEqual(anon.toolCatalog);
    expect(toolsView.agents).toEqual({ goals: anon.agents.goals });
    expect(toolsView.webhooks).toBeUndefined();

    const adminView = (await get(admin)).body;
    expect(adminView).toEqual(anon);
    // Never an oracle: a narrower view's families are a subset of a broader one's, and of the public one's.
    const keys = (d: Record<string, unknown>) => Object.keys({ ...(d.capabilities as object), ...d }).filter((k) => k !== 'capabilities');
    expect(keys(lowView.body).filter((k) => !keys(toolsView).includes(k))).toEqual([]);
    expect(keys(toolsView).filter((k) => !keys(anon).includes(k))).toEqual([]);
  });

  it('views have their own ETags, and a refused credential is told so', async () => {
    const low = await t.key({ scopes: ['runs:read'] });
    const anon = await get();
    const lowView = await get(low);
    expect(lowView.headers.etag).not.toBe(anon.headers.etag);
    expect((await get(low, { 'if-none-match': String(lowView.headers.etag) })).status).toBe(304);
    expect((await get(low, { 'if-none-match': String(anon.headers.etag) })).status).toBe(200);
    const bad = await get('owk_notakey_0000000000000000000000000000000000000000000');
    expect(bad.status).toBe(401);
    expect(bad.body.error).toBe('unauthenticated');
    expect((await get(undefined, { authorization: 'Basic abc' })).status).toBe(401);
  });

  it('removes nested blocks and prunes emptied parents without touching the rest', () => {
    const part = { agents: { goals: { a: 1 }, proposals: { b: 2 } }, limits: { x: 1 } };
    withoutUnusable(part, { 'agents.goals': ['goals:read'], 'agents.proposals': ['proposals:read'] }, { scopes: new Set(['proposals:read']) });
    expect(part).toEqual({ agents: { proposals: { b: 2 } }, limits: { x: 1 } });
    withoutUnusable(part, { 'agents.proposals': ['proposals:read'], 'no.such.path': ['x:y'] }, { scopes: new Set() });
    expect(part).toEqual({ limits: { x: 1 } });
  });
});
