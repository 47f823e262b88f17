import { McpCacheKey, McpResponseCache } from './mcp-response-cache';

describe('McpResponseCache', () => {
  let now = 1_000;
  const cache = () => new McpResponseCache<string>(() => now);
  const key = (over: Partial<McpCacheKey> = {}): McpCacheKey => ({
    serverId: 's',
    tenant: 't1',
    workspace: 'w1',
    principal: 'alice',
    scopes: new Set(['tools:read']),
    origin: 'http://mcp.example/mcp',
    revision: '2026-07-28',
    authContext: 'a',
    ...over,
  });

  beforeEach(() => {
    now = 1_000;
  });

  it('serves an entry for its ttlMs only, and never stores one whose ttlMs is 0', () => {
    const c = cache();
    c.set('tools/list', key(), 'v', 100, 'private');
    expect(c.get('tools/list', key())).toBe('v');
    now += 100;
    expect(c.get('tools/list', key())).toBeUndefined();
    c.set('tools/list', key(), 'zero', 0, 'private');
    expect(c.get('tools/list', key())).toBeUndefined();
  });

  it('keeps a private (or unscoped) entry to its tenant, workspace, principal and scopes: a scope change makes it stale', () => {
    const c = cache();
    c.set('tools/list', key(), 'mine', 1000, 'private');
    c.set('tools/list', key({ tenant: 'other' }), 'unscoped', 1000, undefined);
    expect(c.get('tools/list', key())).toBe('mine');
    for (const other of [{ tenant: 't2' }, { workspace: 'w2' }, { principal: 'bob' }, { scopes: new Set(['tools:read', 'tools:x']) }]) {
      expect(c.get('tools/list', key(other))).toBeUndefined();
    }
    expect(c.get('tools/list', key({ tenant: 'other' }))).toBe('unscoped');
  });

  it('shares a public entry across callers of the same server, revision and credentials only', () => {
    const c = cache();
    c.set('server/discover', key(), 'public', 1000, 'public');
    expect(c.get('server/discover', key({ tenant: 't2', principal: 'bob' }))).toBe('public');
    for (const other of [{ revision: '2025-06-18' }, { origin: 'http://other.example/mcp' }, { authContext: 'b' }, { serverId: 's2' }]) {
      expect(c.get('server/discover', key(other))).toBeUndefined();
    }
    expect(c.get('tools/list', key())).toBeUndefined();
  });

  it('drops the entries of one server origin', () => {
    const c = cache();
    c.set('tools/list', key(), 'a', 1000, 'private');
    c.set('tools/list', key({ origin: 'http://other.example/mcp' }), 'b', 1000, 'public');
    c.dropOrigin('http://mcp.example/mcp');
    expect(c.get('tools/list', key())).toBeUndefined();
    expect(c.get('tools/list', key({ origin: 'http://other.example/mcp' }))).toBe('b');
  });
});
