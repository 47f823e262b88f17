/**
 * Asserts what the official `tool-catalog-projection` scenario (RFC 0078, profile
 * `openwop-tool-catalog`) and the tool leg of `auth-challenge-no-oracle` assert, in order.
 */
import { createTestApp, TestApp } from '../support/test-app';
import { SchemaRegistry } from '../../src/platform/schemas/schema-registry';
import { CONFORMANCE_CONFIG, CONFORMANCE_KEY_SCOPES, CROSS_PRINCIPAL_TOOL_ID, SAFETY_TIERS, TOOL_CONTENT_FORBIDDEN, TOOL_SOURCES } from '../tool-catalog/conformance-kit';

describe('conformance: tool-catalog-projection', () => {
  let t: TestApp;
  let key: string;

  beforeAll(async () => {
    t = await createTestApp({ configFile: CONFORMANCE_CONFIG });
    key = await t.key({ scopes: CONFORMANCE_KEY_SCOPES });
  });

  afterAll(async () => {
    await t?.close();
  });

  it('advertises toolCatalog.supported at the discovery root (the behaviour gate)', async () => {
    const res = await t.http('GET', '/.well-known/openwop', { token: key });
    expect(res.status).toBe(200);
    expect(res.body.toolCatalog.supported).toBe(true);
    expect(res.body.capabilities.toolCatalog).toEqual(res.body.toolCatalog); // the deprecated mirror
  });

  it('GET /v1/tools without Authorization is 401', async () => {
    const res = await t.http('GET', '/v1/tools');
    expect(res.status).toBe(401);
  });

  it('lists an array of schema-valid, secret-free descriptors, reads one back by id, 404s unknown and cross-principal ids', async () => {
    const res = await t.http('GET', '/v1/tools', { token: key });
    expect([404, 405, 501]).not.toContain(res.status);
    const tools = res.body as Array<Record<string, unknown>>;
    expect(Array.isArray(tools)).toBe(true);
    expect(tools.length).toBeGreaterThan(0);
    for (const d of tools) {
      expect(SchemaRegistry.shared().validate('tool-descriptor', d)).toEqual([]);
      expect(TOOL_SOURCES).toContain(d.source);
      expect(SAFETY_TIERS).toContain(d.safetyTier);
      for (const k of TOOL_CONTENT_FORBIDDEN) expect(d).not.toHaveProperty(k);
    }
    const id = String(tools[0].toolId);
    const one = await t.http('GET', `/v1/tools/${encodeURIComponent(id)}`, { token: key });
    expect(one.status).toBe(200);
    expect(one.body.toolId).toBe(id);

    const missing = await t.http('GET', '/v1/tools/__conformance_nonexistent_tool__', { token: key });
    expect(missing.status).toBe(404);

    // OPENWOP_CROSS_PRINCIPAL_TOOL_ID: a real tool this key may not see.
    expect(tools.map((d) => d.toolId)).not.toContain(CROSS_PRINCIPAL_TOOL_ID);
    const cross = await t.http('GET', `/v1/tools/${encodeURIComponent(CROSS_PRINCIPAL_TOOL_ID)}`, { token: key });
    expect(cross.status).toBe(404);
    const holder = await t.key({ scopes: [...CONFORMANCE_KEY_SCOPES, 'tools:conformance:hidden'] });
    expect((await t.http('GET', `/v1/tools/${encodeURIComponent(CROSS_PRINCIPAL_TOOL_ID)}`, { token: holder })).status).toBe(200);
  });

  it('advisory: two reads give identical id sequences sorted by JS string <', async () => {
    const a = (await t.http('GET', '/v1/tools', { token: key })).body.map((d: { toolId: string }) => d.toolId);
    const b = (await t.http('GET', '/v1/tools', { token: key })).body.map((d: { toolId: string }) => d.toolId);
    expect(a).toEqual(b);
    for (let i = 1; i < a.length; i++) expect(a[i - 1] < a[i]).toBe(true);
  });

  it('auth-challenge-no-oracle leg 1: an absent tool is 404 with no scope challenge', async () => {
    const res = await t.http('GET', '/v1/tools/conformance.absent-0123456789abcdef', { token: key });
    expect(res.status).toBe(404);
    const challenge = res.headers['www-authenticate'];
    if (challenge !== undefined) {
      expect(String(challenge)).not.toMatch(/error="insufficient_scope"/);
      expect(String(challenge)).not.toMatch(/scope=/);
    }
  });
});
