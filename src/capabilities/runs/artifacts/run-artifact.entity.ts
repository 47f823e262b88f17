import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import { WorkspaceOwnedEntity } from '../../../platform/tenancy/tenant-owned.entity';

/**
 * A file a node of a run produced (`ctx.artifacts.put`). The row is the artifact's metadata and
 * its authorization facts (tenant, workspace, run) whichever store holds the bytes; `content` holds
 * them when the store is the database (`store = 'database'`), otherwise `store_ref` names them in
 * the plugin store. Deleted with its run (retention).
 */
@Entity({ name: 'run_artifact' })
@Index('IDX_run_artifact_run', ['tenant', 'runId', 'createdAt'])
export class RunArtifactEntity extends WorkspaceOwnedEntity {
  @PrimaryColumn({ type: 'uuid', primaryKeyConstraintName: 'PK_run_artifact' })
  id: string;

  @Column({ name: 'run_id', type: 'uuid' })
  runId: string;

  @Column({ name: 'node_id', type: 'text' })
  nodeId: string;

  @Column({ type: 'text' })
  name: string;

  @Column({ name: 'content_type', type: 'text' })
  contentType: string;

  @Column({ name: 'size_bytes', type: 'bigint' })
  sizeBytes: string;

  @Column({ type: 'text' })
  store: string;

  @Column({ name: 'store_ref', type: 'text', nullable: true })
  storeRef: string | null;

  @Column({ type: 'bytea', nullable: true, select: false })
  content: Buffer | null;

  @Column({ type: 'jsonb', nullable: true })
  metadata: Record<string, unknown> | null;

  @Column({ name: 'created_at', type: 'timestamptz', default: () => 'now()' })
  createdAt: Date;
}
