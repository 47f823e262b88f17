import { createHash } from 'node:crypto';
import { Inject, Injectable, Logger } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { AuditLogService, AuditRecord } from '../../../platform/audit/audit-log.service';
import { CatalogClock } from '../tool-catalog.service';
import { TOOL_CATALOG_SETTINGS, ToolCatalogSettings, McpServerConfig } from '../tool-catalog.config';
import { connectMcp, McpConnection, McpConnectOptions, McpVerdict } from './mcp-connect';
import { MCP_CURRENT_REVISION, MCP_LEGACY_REVISION, McpRefusalReason, McpRevisionError } from './mcp-revision';

/** Whoever an MCP exchange is made for: the tenant (and workspace) and, for calls, the principal. */
export interface McpCaller {
  tenant: string;
  workspace?: string;
  principal?: { principal: string; kind: string; keyId?: string; scopes?: ReadonlySet<string> };
}

/** What the host last settled with a server (per replica): shown by `GET /v1/mcp/servers`. */
export interface McpServerState {
  requested: string;
  revision?: string;
  era?: 'modern' | 'legacy';
  downgraded?: boolean;
  at: string;
  refused?: { reason: string; requested: string };
}

/** A refusal's reason as the negotiation record names it (a forbidden downgrade: the server is below the policy's floor). */
const REFUSAL_REASON: Record<McpRefusalReason, string> = { unsupported: 'unsupported', 'version-downgrade-forbidden': 'below-floor', unauthenticated: 'unauthenticated' };

/** Longest a negotiation verdict (or a cached listing) is kept, whatever TTL the server asks for. */
export const MCP_MAX_CACHE_MS = 3_600_000;

const SYSTEM_ACTOR = { principal: 'openwop-host', kind: 'system' };

/** The server a configuration names, for cache keys: its URL or its command line. */
export function serverOrigin(cfg: McpServerConfig): string {
  if (cfg.transport === 'http') {
    const u = new URL(cfg.url);
    return `${u.origin}${u.pathname}${u.search}`;
  }
  return `stdio:${createHash('sha256').update(JSON.stringify([cfg.command, cfg.args, cfg.cwd ?? ''])).digest('hex').slice(0, 32)}`;
}

/** A digest of what the host presents to the server (its configured headers or environment), never the values. */
export function authContextOf(cfg: McpServerConfig): string {
  const material = cfg.transport === 'http' ? cfg.headers ?? {} : cfg.env ?? {};
  return createHash('sha256').update(JSON.stringify(Object.entries(material).sort())).digest('hex').slice(0, 32);
}

/**
 * The host's MCP client: every connection to a configured server goes through here, so the
 * revision rules hold in one place. A negotiation's verdict is kept per server (for the
 * `server/discover` TTL, capped at an hour; a legacy verdict for the catalog TTL), so later
 * connections skip the probe; a downgrade and a refusal are logged and audited (once per server and
 * tenant while they last), and the last outcome is kept for the operator's view.
 */
@Injectable()
export class McpClientService {
  private readonly log = new Logger('ToolCatalog');
  private readonly verdicts = new Map<string, { verdict: McpVerdict; expiresAt: number }>();
  private readonly states = new Map<string, McpServerState>();
  /** `<serverId>\0<tenant>\0<what>` already audited while the outcome lasts. */
  private readonly audited = new Set<string>();

  constructor(
    @Inject(TOOL_CATALOG_SETTINGS) private readonly settings: ToolCatalogSettings,
    private readonly clock: CatalogClock,
    private readonly ds: DataSource,
    private readonly audit: AuditLogService,
  ) {}

  /** The configured servers a tenant may use. */
  servers(tenant: string): McpServerConfig[] {
    return this.settings.mcpServers.filter((s) => !s.tenants || s.tenants.includes(tenant));
  }

  /** Whether a server of this id is configured (for any tenant). */
  configured(id: string): boolean {
    return this.settings.mcpServers.some((s) => s.id === id);
  }

  /** A configured server a tenant may use, or undefined (unknown and hidden are the same). */
  server(id: string, tenant: string): McpServerConfig | undefined {
    return this.servers(tenant).find((s) => s.id === id);
  }

  state(serverId: string): McpServerState | undefined {
    return this.states.get(serverId);
  }

  /** The revision the host currently uses with a server, if it has settled one. */
  revisionOf(serverId: string): string | undefined {
    return this.verdictOf(serverId)?.revision ?? this.states.get(serverId)?.revision;
  }

  /**
   * Connects as `connectMcp` does, reusing a fresh verdict; records and audits the outcome. Only the
   * host's own negotiation (the current revision asked for, with credentials) is the server's
   * standing: an exchange that asks for a given revision, or counts as unauthenticated (the
   * conformance seam), is neither cached nor recorded.
   */
  async connect(cfg: McpServerConfig, caller: McpCaller, o: Omit<McpConnectOptions, 'prior'>): Promise<McpConnection> {
    const requested = o.requestVersion ?? MCP_CURRENT_REVISION;
    const standing = o.requestVersion === undefined && o.authenticated !== false;
    const prior = standing ? this.verdictOf(cfg.id) : undefined;
    let conn: McpConnection;
    try {
      conn = await connectMcp(cfg, { ...o, prior });
    } catch (e) {
      if (e instanceof McpRevisionError && standing) await this.refused(cfg, caller, e);
      throw e;
    }
    if (!standing) return conn;
    if (conn.negotiated) {
      const discoverTtl = Number((conn.verdict.discover as { ttlMs?: unknown } | undefined)?.ttlMs);
      const ttl = conn.era === 'modern' ? (Number.isFinite(discoverTtl) && discoverTtl >= 0 ? discoverTtl : 0) : this.settings.cacheTtlMs;
      if (ttl > 0) this.verdicts.set(cfg.id, { verdict: conn.verdict, expiresAt: this.clock.now() + Math.min(ttl, MCP_MAX_CACHE_MS) });
      this.states.set(cfg.id, { requested, revision: conn.revision, era: conn.era, downgraded: conn.downgraded, at: new Date(this.clock.now()).toISOString() });
      this.forget(cfg.id, 'refused');
      this.forget(cfg.id, 'decided:refused');
      await this.decided(cfg, caller, { outcome: 'accepted', version: conn.revision, reason: 'ok', requested, downgraded: conn.downgraded });
      if (conn.downgraded) await this.downgraded(cfg, caller, conn);
      else this.forget(cfg.id, 'downgraded');
    }
    return conn;
  }

  /** Drops a server's verdict (after a failure), so the next connection negotiates again. */
  reset(serverId: string): void {
    this.verdicts.delete(serverId);
  }

  private verdictOf(serverId: string): McpVerdict | undefined {
    const v = this.verdicts.get(serverId);
    if (!v) return undefined;
    if (v.expiresAt > this.clock.now()) return v.verdict;
    this.verdicts.delete(serverId);
    return undefined;
  }

  private async downgraded(cfg: McpServerConfig, caller: McpCaller, conn: McpConnection): Promise<void> {
    this.log.warn({ msg: 'MCP server does not speak the current revision; reached through the legacy handshake', server: cfg.id, requested: conn.requested, selected: conn.revision });
    await this.auditOnce(cfg, caller, 'downgraded', {
      action: 'mcp.version-downgraded',
      details: { serverId: cfg.id, requested: conn.requested, selected: conn.revision },
    });
  }

  private async refused(cfg: McpServerConfig, caller: McpCaller, e: McpRevisionError): Promise<void> {
    this.states.set(cfg.id, { requested: e.requested, at: new Date(this.clock.now()).toISOString(), refused: { reason: e.reason, requested: e.requested } });
    this.verdicts.delete(cfg.id);
    this.log.warn({ msg: 'MCP revision negotiation refused; the server is not used', server: cfg.id, requested: e.requested, reason: e.reason });
    await this.auditOnce(cfg, caller, `refused:${e.reason}`, {
      action: 'mcp.version-refused',
      details: { serverId: cfg.id, requested: e.requested, reason: e.reason },
    });
    this.forget(cfg.id, 'decided:accepted');
    await this.decided(cfg, caller, { outcome: 'refused', reason: REFUSAL_REASON[e.reason], requested: e.requested });
  }

  /**
   * The content-free record of one negotiation's outcome (RFC 0175 §D.3; the v2 event payload
   * `negotiationDecided`: protocol, outcome, version, floor, peerDigest, reason, at), written to the
   * host's log at every fresh negotiation and audited once per server, tenant and outcome while it
   * lasts (`negotiation.decided`, with the revision requested and whether it was a downgrade). The
   * peer is named by the SHA-256 of its origin, never the origin.
   */
  private async decided(cfg: McpServerConfig, caller: McpCaller, d: { outcome: 'accepted' | 'refused'; version?: string; reason: string; requested: string; downgraded?: boolean }): Promise<void> {
    const peerDigest = cfg.transport === 'http' ? createHash('sha256').update(new URL(cfg.url).origin).digest('hex') : undefined;
    const record = {
      protocol: 'mcp',
      outcome: d.outcome,
      ...(d.version ? { version: d.version } : {}),
      floor: cfg.downgrade === 'forbid' ? MCP_CURRENT_REVISION : MCP_LEGACY_REVISION,
      ...(peerDigest ? { peerDigest } : {}),
      reason: d.reason,
      at: new Date(this.clock.now()).toISOString(),
    };
    this.log.log({ msg: 'negotiation.decided', server: cfg.id, tenant: caller.tenant, requested: d.requested, ...(d.downgraded ? { downgraded: true } : {}), ...record });
    await this.auditOnce(cfg, caller, `decided:${d.outcome}:${d.version ?? d.reason}`, {
      action: 'negotiation.decided',
      details: { serverId: cfg.id, requested: d.requested, downgraded: d.downgraded === true, ...record },
    });
  }

  private forget(serverId: string, what: string): void {
    for (const k of [...this.audited]) if (k.startsWith(`${serverId}\u0000`) && k.split('\u0000')[2].startsWith(what)) this.audited.delete(k);
  }

  /** One audit entry per server, tenant and outcome while it lasts; a failed append is logged, never thrown. */
  private async auditOnce(cfg: McpServerConfig, caller: McpCaller, what: string, rec: Pick<AuditRecord, 'action' | 'details'>): Promise<void> {
    const key = `${cfg.id}\u0000${caller.tenant}\u0000${what}`;
    if (this.audited.has(key)) return;
    this.audited.add(key);
    const actor = caller.principal ? { principal: caller.principal.principal, kind: caller.principal.kind, ...(caller.principal.keyId ? { keyId: caller.principal.keyId } : {}) } : SYSTEM_ACTOR;
    try {
      await this.ds.transaction((m) =>
        this.audit.record(m, { tenant: caller.tenant, ...(caller.workspace ? { workspace: caller.workspace } : {}), actor, resource: { type: 'mcp-server', id: cfg.id }, ...rec }),
      );
    } catch (err) {
      this.audited.delete(key);
      this.log.error({ msg: 'could not audit an MCP revision outcome', server: cfg.id, err });
    }
  }
}
