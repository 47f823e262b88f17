import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { loadConfigFile } from '../../platform/config/host-config';
import { SchemaRegistry } from '../../platform/schemas/schema-registry';
import { DEFAULT_CACHE_TTL_MS, toolCatalogSettings } from './tool-catalog.config';

function load(tools: unknown) {
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'tc-cfg-')), 'c.json');
  fs.writeFileSync(file, JSON.stringify({ tools }));
  return loadConfigFile(file, SchemaRegistry.shared());
}

describe('tools section of OPENWOP_CONFIG', () => {
  it('accepts stdio and http servers, classifications and host-extension tools, with defaults', () => {
    const file = load({
      mcpServers: [
        { id: 'fs', transport: 'stdio', command: 'node', args: ['s.js'], classification: { read: { safetyTier: 'read', egress: 'none' } } },
        { id: 'web', transport: 'http', url: 'https://mcp.example.com/mcp', headers: { authorization: 'Bearer x' }, tenants: ['a'], downgrade: 'forbid' },
      ],
      hostExtensions: [{ toolId: 'x-host-acme-run', safetyTier: 'exec' }],
    });
    const s = toolCatalogSettings({ file, toolSourceTimeoutMs: 5000 });
    expect(s.cacheTtlMs).toBe(DEFAULT_CACHE_TTL_MS);
    expect(s.mcpServers).toEqual([
      { id: 'fs', transport: 'stdio', command: 'node', args: ['s.js'], env: undefined, cwd: undefined, tenants: undefined, classification: { read: { safetyTier: 'read', egress: 'none' } }, downgrade: 'allow' },
      { id: 'web', transport: 'http', url: 'https://mcp.example.com/mcp', headers: { authorization: 'Bearer x' }, tenants: ['a'], classification: {}, downgrade: 'forbid' },
    ]);
  });

  it.each([
    ['an exec classification for an MCP tool', { mcpServers: [{ id: 'a', transport: 'stdio', command: 'x', classification: { t: { safetyTier: 'exec' } } }] }],
    ['an unknown transport', { mcpServers: [{ id: 'a', transport: 'sse', url: 'http://x' }] }],
    ['a stdio server without a command', { mcpServers: [{ id: 'a', transport: 'stdio' }] }],
    ['a server id with a dot', { mcpServers: [{ id: 'a.b', transport: 'stdio', command: 'x' }] }],
    ['a host-extension tool without the x-host- prefix', { hostExtensions: [{ toolId: 'acme-run', safetyTier: 'read' }] }],
    ['a host-extension tool with a source', { hostExtensions: [{ toolId: 'x-host-acme-run', safetyTier: 'read', source: 'mcp' }] }],
    ['a negative cache TTL', { cacheTtlMs: -1 }],
    ['an unknown downgrade policy', { mcpServers: [{ id: 'a', transport: 'http', url: 'https://x.example/mcp', downgrade: 'sometimes' }] }],
    ['an unknown dispatch decision', { dispatchPolicy: { tiers: { write: 'ask' } } }],
    ['a dispatch policy for an unknown tier', { dispatchPolicy: { tiers: { admin: 'deny' } } }],
    ['a dispatch rule with a * inside a tool id', { dispatchPolicy: { tools: { 'mcp:*.x': 'deny' } } }],
    ['an unknown dispatch policy key', { dispatchPolicy: { default: 'deny' } }],
  ])('refuses %s at start', (_what, tools) => {
    expect(() => load(tools)).toThrow(/OPENWOP_CONFIG/);
  });

  it('reads tools.dispatchPolicy, and leaves it undefined when absent (allow everything)', () => {
    const policy = { tiers: { write: 'approve', exec: 'deny' }, tools: { 'mcp:files.*': 'approve', 'mcp:files.read_file': 'allow' } };
    expect(toolCatalogSettings({ file: load({ dispatchPolicy: policy }), toolSourceTimeoutMs: 5000 }).dispatchPolicy).toEqual(policy);
    expect(toolCatalogSettings({ file: load({}), toolSourceTimeoutMs: 5000 }).dispatchPolicy).toBeUndefined();
  });

  it('refuses two servers with the same id', () => {
    const file = load({ mcpServers: [{ id: 'a', transport: 'stdio', command: 'x' }, { id: 'a', transport: 'stdio', command: 'y' }] });
    expect(() => toolCatalogSettings({ file, toolSourceTimeoutMs: 5000 })).toThrow(/duplicate server id "a"/);
  });
});
