import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { DispatchDecision } from './dispatch-policy';

/**
 * A tenant's override of the governed dispatch policy (over the host config's `tools.dispatchPolicy`):
 * its tier and per-tool decisions and its revision, incremented on every change.
 */
@Entity({ name: 'tool_dispatch_policy' })
export class ToolDispatchPolicyEntity {
  @PrimaryColumn({ type: 'text' })
  tenant: string;

  @Column({ type: 'integer' })
  revision: number;

  @Column({ type: 'jsonb' })
  tiers: Record<string, DispatchDecision>;

  @Column({ type: 'jsonb' })
  tools: Record<string, DispatchDecision>;

  @Column({ name: 'updated_at', type: 'timestamptz', default: () => 'now()' })
  updatedAt: Date;

  @Column({ name: 'updated_by', type: 'text' })
  updatedBy: string;
}
