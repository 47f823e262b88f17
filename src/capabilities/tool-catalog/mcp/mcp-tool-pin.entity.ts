import { Column, Entity, PrimaryColumn } from 'typeorm';

export type McpToolPinState = 'approved' | 'held';

/**
 * The definition of one MCP tool a tenant has accepted (a tool-poisoning defence): the digest of its
 * name, description and input/output schemas, recorded when the tenant's catalog first saw the tool.
 * A server that later serves a different definition leaves the tool `held` (out of the catalog, its
 * calls refused) with the digest it now serves in `observed_digest`, until an operator approves it.
 */
@Entity({ name: 'mcp_tool_pin' })
export class McpToolPinEntity {
  @PrimaryColumn({ type: 'text' })
  tenant: string;

  @PrimaryColumn({ name: 'server_id', type: 'text' })
  serverId: string;

  @PrimaryColumn({ name: 'tool_name', type: 'text' })
  toolName: string;

  @Column({ name: 'approved_digest', type: 'text' })
  approvedDigest: string;

  @Column({ name: 'observed_digest', type: 'text' })
  observedDigest: string;

  @Column({ type: 'text' })
  state: McpToolPinState;

  @Column({ name: 'first_seen_at', type: 'timestamptz', default: () => 'now()' })
  firstSeenAt: Date;

  @Column({ name: 'changed_at', type: 'timestamptz', nullable: true })
  changedAt: Date | null;

  @Column({ name: 'approved_at', type: 'timestamptz', nullable: true })
  approvedAt: Date | null;

  @Column({ name: 'approved_by', type: 'text', nullable: true })
  approvedBy: string | null;
}
