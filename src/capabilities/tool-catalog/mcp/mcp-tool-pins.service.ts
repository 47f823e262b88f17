import { createHash } from 'node:crypto';
import { Injectable, Logger } from '@nestjs/common';
import canonicalize from 'canonicalize';
import { DataSource } from 'typeorm';
import { AuditLogService, auditActor } from '../../../platform/audit/audit-log.service';
import { ConflictError, NotFoundError } from '../../../platform/errors/domain-error';
import type { Principal } from '../../../platform/identity/principal';
import { McpToolPinEntity, McpToolPinState } from './mcp-tool-pin.entity';

/** The fields of a tool definition that are pinned. */
export interface McpToolDefinition {
  name: string;
  description?: string;
  inputSchema?: Record<string, unknown>;
  outputSchema?: Record<string, unknown>;
}

/** A pin as the API shows it. */
export interface McpToolPinView {
  serverId: string;
  toolName: string;
  state: McpToolPinState;
  approvedDigest: string;
  /** The digest the server serves now (differs from `approvedDigest` while held). */
  observedDigest: string;
  firstSeenAt: string;
  changedAt: string | null;
  approvedAt: string | null;
  approvedBy: string | null;
}

/** `sha256:<hex>` of the RFC 8785 (JCS) text of `{name, description, inputSchema, outputSchema}`. */
export function toolDefinitionDigest(t: McpToolDefinition): string {
  const text = canonicalize({ name: t.name, description: t.description ?? null, inputSchema: t.inputSchema ?? null, outputSchema: t.outputSchema ?? null }) ?? '';
  return `sha256:${createHash('sha256').update(text).digest('hex')}`;
}

const SYSTEM_ACTOR = { principal: 'openwop-host', kind: 'system' };

/**
 * Pinned MCP tool definitions, per tenant (a tool-poisoning defence). The first time a tenant's
 * catalog sees a tool its definition digest is recorded as approved; a later, different definition
 * holds the tool (left out of the catalog, calls refused) until an operator approves the digest it
 * now has. Holding and approving are audited.
 */
@Injectable()
export class McpToolPinsService {
  private readonly log = new Logger('ToolCatalog');
  private readonly listeners: Array<(tenant: string) => void> = [];

  constructor(
    private readonly ds: DataSource,
    private readonly audit: AuditLogService,
  ) {}

  /** Told after an approval, so the tenant's cached catalog is dropped and the tool shows again at once. */
  onApproved(fn: (tenant: string) => void): void {
    this.listeners.push(fn);
  }

  /**
   * Checks a server's tools against the tenant's pins: records the unseen ones, holds the changed
   * ones. Answers the names of the tools that may be served.
   */
  async admit(tenant: string, serverId: string, tools: McpToolDefinition[]): Promise<Set<string>> {
    const digests = new Map(tools.map((t) => [t.name, toolDefinitionDigest(t)]));
    const pins = await this.ds.getRepository(McpToolPinEntity).find({ where: { tenant, serverId } });
    const byName = new Map(pins.map((p) => [p.toolName, p]));
    const admitted = new Set<string>();
    const unseen: string[] = [];
    for (const [name, digest] of digests) {
      const pin = byName.get(name);
      if (!pin) {
        unseen.push(name);
        admitted.add(name);
      } else if (pin.approvedDigest === digest) {
        admitted.add(name);
        // The server went back to the approved definition: the hold ends by itself.
        if (pin.state === 'held') await this.ds.query(`UPDATE "mcp_tool_pin" SET "state" = 'approved', "observed_digest" = "approved_digest" WHERE "tenant" = $1 AND "server_id" = $2 AND "tool_name" = $3`, [tenant, serverId, name]);
      } else if (pin.state !== 'held' || pin.observedDigest !== digest) {
        await this.hold(tenant, serverId, name, pin.approvedDigest, digest);
      }
    }
    if (unseen.length) {
      await this.ds.query(
        `INSERT INTO "mcp_tool_pin" ("tenant", "server_id", "tool_name", "approved_digest", "observed_digest", "state")
         SELECT $1, $2, n, d, d, 'approved' FROM unnest($3::text[], $4::text[]) AS u(n, d)
         ON CONFLICT ("tenant", "server_id", "tool_name") DO NOTHING`,
        [tenant, serverId, unseen, unseen.map((n) => digests.get(n) as string)],
      );
      // Another replica may have pinned a different definition first: its pin is the one that counts.
      const raced = await this.ds.getRepository(McpToolPinEntity).find({ where: unseen.map((toolName) => ({ tenant, serverId, toolName })) });
      for (const p of raced) if (p.approvedDigest !== digests.get(p.toolName)) admitted.delete(p.toolName);
    }
    return admitted;
  }

  /** Whether a tool with this definition may be called for the tenant (an unseen tool is pinned now). */
  async callable(tenant: string, serverId: string, tool: McpToolDefinition): Promise<boolean> {
    return (await this.admit(tenant, serverId, [tool])).has(tool.name);
  }

  async list(tenant: string, filter: { serverId?: string; state?: McpToolPinState } = {}): Promise<McpToolPinView[]> {
    const rows = await this.ds.getRepository(McpToolPinEntity).find({
      where: { tenant, ...(filter.serverId ? { serverId: filter.serverId } : {}), ...(filter.state ? { state: filter.state } : {}) },
      order: { serverId: 'ASC', toolName: 'ASC' },
    });
    return rows.map(view);
  }

  /**
   * Approves the definition a held tool now has. `digest` must be the one the operator reviewed (the
   * held pin's `observedDigest`): a definition that changed again since is not approved by mistake.
   */
  async approve(p: Principal, serverId: string, toolName: string, digest: string): Promise<McpToolPinView> {
    const approved = await this.ds.transaction(async (m) => {
      const rows = (await m.query(`SELECT * FROM "mcp_tool_pin" WHERE "tenant" = $1 AND "server_id" = $2 AND "tool_name" = $3 FOR UPDATE`, [p.tenant, serverId, toolName])) as Array<Record<string, unknown>>;
      if (!rows.length) throw new NotFoundError('No pinned MCP tool has this server and name.');
      const row = rows[0];
      if (row.observed_digest !== digest) {
        throw new ConflictError('mcp_tool_definition_changed', 'The tool now has another definition than the digest given; review the current one.', { observedDigest: String(row.observed_digest) });
      }
      const updated = (await m.query(
        `UPDATE "mcp_tool_pin" SET "approved_digest" = $4, "observed_digest" = $4, "state" = 'approved', "approved_at" = now(), "approved_by" = $5
         WHERE "tenant" = $1 AND "server_id" = $2 AND "tool_name" = $3 RETURNING *`,
        [p.tenant, serverId, toolName, digest, p.principal],
      )) as [Array<Record<string, unknown>>, number];
      await this.audit.record(m, {
        tenant: p.tenant,
        actor: auditActor(p),
        action: 'mcp.tool-approved',
        resource: { type: 'mcp-tool', id: `${serverId}.${toolName}` },
        details: { serverId, toolName, digest, previousDigest: String(row.approved_digest) },
      });
      return viewOfRow(updated[0][0]);
    });
    for (const l of this.listeners) l(p.tenant);
    return approved;
  }

  private async hold(tenant: string, serverId: string, toolName: string, approved: string, observed: string): Promise<void> {
    this.log.warn({ msg: 'an MCP tool definition changed since it was approved; the tool is held until an operator approves it', server: serverId, tool: toolName, tenant });
    try {
      await this.ds.transaction(async (m) => {
        await m.query(`UPDATE "mcp_tool_pin" SET "state" = 'held', "observed_digest" = $4, "changed_at" = now() WHERE "tenant" = $1 AND "server_id" = $2 AND "tool_name" = $3`, [tenant, serverId, toolName, observed]);
        await this.audit.record(m, {
          tenant,
          actor: SYSTEM_ACTOR,
          action: 'mcp.tool-held',
          resource: { type: 'mcp-tool', id: `${serverId}.${toolName}` },
          details: { serverId, toolName, approvedDigest: approved, observedDigest: observed },
        });
      });
    } catch (err) {
      // The tool stays out of this listing whatever happened to the record; the next listing tries again.
      this.log.error({ msg: 'could not record a held MCP tool', server: serverId, tool: toolName, err });
    }
  }
}

function iso(v: unknown): string | null {
  if (v === null || v === undefined) return null;
  return (v instanceof Date ? v : new Date(String(v))).toISOString();
}

function view(p: McpToolPinEntity): McpToolPinView {
  return {
    serverId: p.serverId,
    toolName: p.toolName,
    state: p.state,
    approvedDigest: p.approvedDigest,
    observedDigest: p.observedDigest,
    firstSeenAt: iso(p.firstSeenAt) as string,
    changedAt: iso(p.changedAt),
    approvedAt: iso(p.approvedAt),
    approvedBy: p.approvedBy,
  };
}

function viewOfRow(r: Record<string, unknown>): McpToolPinView {
  return {
    serverId: String(r.server_id),
    toolName: String(r.tool_name),
    state: r.state as McpToolPinState,
    approvedDigest: String(r.approved_digest),
    observedDigest: String(r.observed_digest),
    firstSeenAt: iso(r.first_seen_at) as string,
    changedAt: iso(r.changed_at),
    approvedAt: iso(r.approved_at),
    approvedBy: (r.approved_by as string | null) ?? null,
  };
}
