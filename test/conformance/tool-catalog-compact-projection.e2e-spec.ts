/** Asserts what the official `tool-catalog-compact-projection` scenario (RFC 0112) asserts. */
import { createTestApp, TestApp } from '../support/test-app';
import { SchemaRegistry } from '../../src/platform/schemas/schema-registry';
import {
  COMPACT_DROPPED_FIELDS,
  CONFORMANCE_CONFIG,
  CONFORMANCE_KEY_SCOPES,
  findBannedInputSchemaKeyword,
} from '../tool-catalog/conformance-kit';

describe('conformance: tool-catalog-compact-projection', () => {
  let t: TestApp;
  let key: string;

  beforeAll(async () => {
    t = await createTestApp({ configFile: CONFORMANCE_CONFIG });
    key = await t.key({ scopes: CONFORMANCE_KEY_SCOPES });
  });

  afterAll(async () => {
    await t?.close();
  });

  it('advertises compactView (the behaviour gate)', async () => {
    const res = await t.http('GET', '/.well-known/openwop');
    expect(res.body.toolCatalog.compactView).toBe(true);
  });

  it('serves {tools: CompactToolDescriptor[]} in the structural subset, with the standard view\'s id set, and one compact descriptor by id', async () => {
    const res = await t.http('GET', '/v1/tools?view=compact', { token: key });
    expect(res.status).toBe(200);
    expect(res.body && typeof res.body === 'object' && !Array.isArray(res.body)).toBe(true);
    const compact = res.body.tools as Array<Record<string, unknown>>;
    expect(Array.isArray(compact)).toBe(true);
    expect(compact.some((d) => d.toolId === 'x-host-conformance-nested')).toBe(true);
    for (const d of compact) {
      expect(SchemaRegistry.shared().validate('compact-tool-descriptor', d)).toEqual([]);
      for (const f of COMPACT_DROPPED_FIELDS) expect(d).not.toHaveProperty(f);
      if (d.inputSchema) {
        const s = d.inputSchema as Record<string, unknown>;
        expect(s.type).toBe('object');
        expect(s.properties && typeof s.properties === 'object').toBe(true);
        expect(findBannedInputSchemaKeyword(s)).toBeNull();
      }
    }
    const std = await t.http('GET', '/v1/tools', { token: key });
    const stdIds = (Array.isArray(std.body) ? std.body : std.body.tools).map((d: { toolId: string }) => d.toolId);
    expect(new Set(compact.map((d) => d.toolId))).toEqual(new Set(stdIds));

    const first = String(compact[0].toolId);
    const one = await t.http('GET', `/v1/tools/${encodeURIComponent(first)}?view=compact`, { token: key });
    expect(one.status).toBe(200);
    expect(SchemaRegistry.shared().validate('compact-tool-descriptor', one.body)).toEqual([]);
    expect(one.body.toolId).toBe(first);
  });
});
