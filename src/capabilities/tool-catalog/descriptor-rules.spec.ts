import { ToolSourceKind, toolDescriptorProblems } from '@openwop-host/plugin-sdk';
import { descriptorProblems } from './descriptor-rules';

/**
 * The plugin SDK's contract kit checks descriptors without a JSON Schema validator; it must accept
 * exactly what the catalog serves, or a plugin passing its own tests would lose tools in the host.
 */
describe('the SDK descriptor check agrees with the catalog', () => {
  const base = { toolId: 'x-host-acme-a', source: 'host-extension', safetyTier: 'read' };
  const cases: Array<[string, unknown, ToolSourceKind]> = [
    ['minimal', base, 'host-extension'],
    ['every field', { ...base, title: 't', description: 'd', inputSchema: { type: 'object' }, outputSchema: {}, auth: { scopes: ['a', 'b'], credentialRef: true }, egress: 'none', approval: 'always', replayPolicy: 'idempotent', costHint: 'low', latencyHint: 'high' }, 'host-extension'],
    ['exec from host-extension', { ...base, safetyTier: 'exec' }, 'host-extension'],
    ['an mcp tool', { toolId: 'mcp:files.read', source: 'mcp', safetyTier: 'read' }, 'mcp'],
    ['no safetyTier', { toolId: 'x-host-acme-a', source: 'host-extension' }, 'host-extension'],
    ['no toolId', { source: 'host-extension', safetyTier: 'read' }, 'host-extension'],
    ['empty toolId', { ...base, toolId: '' }, 'host-extension'],
    ['a slash in the id', { ...base, toolId: 'x-host-acme-a/b' }, 'host-extension'],
    ['a space in the id', { ...base, toolId: 'x-host-acme-a b' }, 'host-extension'],
    ['a long id', { ...base, toolId: `x-host-acme-${'a'.repeat(600)}` }, 'host-extension'],
    ['host-extension without the prefix', { ...base, toolId: 'acme.a' }, 'host-extension'],
    ['another source than the lister', base, 'mcp'],
    ['exec from mcp', { toolId: 'mcp:x', source: 'mcp', safetyTier: 'exec' }, 'mcp'],
    ['an unknown key', { ...base, secret: 'x' }, 'host-extension'],
    ['an unknown tier', { ...base, safetyTier: 'danger' }, 'host-extension'],
    ['an unknown egress', { ...base, egress: 'internet' }, 'host-extension'],
    ['an unknown hint', { ...base, costHint: 'free' }, 'host-extension'],
    ['credential material in auth', { ...base, auth: { token: 'x' } }, 'host-extension'],
    ['repeated scopes', { ...base, auth: { scopes: ['a', 'a'] } }, 'host-extension'],
    ['a non-string scope', { ...base, auth: { scopes: [1] } }, 'host-extension'],
    ['credentialRef not boolean', { ...base, auth: { credentialRef: 'yes' } }, 'host-extension'],
    ['inputSchema not an object', { ...base, inputSchema: 'object' }, 'host-extension'],
    ['title not a string', { ...base, title: 3 }, 'host-extension'],
    ['not an object', 'x-host-acme-a', 'host-extension'],
  ];
  it.each(cases)('%s', (_name, d, kind) => {
    expect(toolDescriptorProblems(d, kind).length === 0).toBe(descriptorProblems(d, kind).length === 0);
  });
});
