import { createHash } from 'node:crypto';

/**
 * Who a cached MCP answer was fetched for (`mcp-cache-tenant-scoped`): the tenant, workspace and
 * principal (with a digest of the scopes it held, so a grant or revoke makes its entries stale), the
 * server origin, the revision the answer was made under and what the host presented to the server.
 */
export interface McpCacheKey {
  /** The configured server (two configurations of one URL never share entries). */
  serverId: string;
  tenant: string;
  workspace?: string;
  principal?: string;
  scopes?: ReadonlySet<string>;
  origin: string;
  revision: string;
  authContext: string;
}

/** The most entries kept; the oldest goes first. */
const MAX_ENTRIES = 10_000;

function scopesDigest(scopes: ReadonlySet<string> | undefined): string {
  return scopes ? createHash('sha256').update([...scopes].sort().join(' ')).digest('hex').slice(0, 16) : '';
}

/**
 * A per-replica cache of MCP results that honours the server's hints: an entry lives `ttlMs` (capped
 * by the caller; `0` is never stored), and one whose `cacheScope` is `private` (or absent) is found
 * only by the same tenant, workspace, principal and scopes; a `public` one by anyone reaching the same
 * server, at the same revision, with the same credentials.
 */
export class McpResponseCache<T> {
  private readonly entries = new Map<string, { value: T; expiresAt: number }>();

  constructor(private readonly now: () => number) {}

  get(method: string, k: McpCacheKey): T | undefined {
    return this.read(privateKey(method, k)) ?? this.read(publicKey(method, k));
  }

  set(method: string, k: McpCacheKey, value: T, ttlMs: number, scope: 'public' | 'private' | undefined): void {
    if (!(ttlMs > 0)) return;
    const key = scope === 'public' ? publicKey(method, k) : privateKey(method, k);
    this.entries.delete(key);
    this.entries.set(key, { value, expiresAt: this.now() + ttlMs });
    if (this.entries.size > MAX_ENTRIES) this.entries.delete(this.entries.keys().next().value as string);
  }

  /** Drops every entry of a server (by origin), e.g. when its connection dropped. */
  dropOrigin(origin: string): void {
    for (const key of [...this.entries.keys()]) if (JSON.parse(key)[1] === origin) this.entries.delete(key);
  }

  private read(key: string): T | undefined {
    const e = this.entries.get(key);
    if (!e) return undefined;
    if (e.expiresAt > this.now()) return e.value;
    this.entries.delete(key);
    return undefined;
  }
}

function publicKey(method: string, k: McpCacheKey): string {
  return JSON.stringify([method, k.origin, k.serverId, k.revision, k.authContext]);
}

function privateKey(method: string, k: McpCacheKey): string {
  return JSON.stringify([method, k.origin, k.serverId, k.revision, k.authContext, k.tenant, k.workspace ?? '', k.principal ?? '', scopesDigest(k.scopes)]);
}
