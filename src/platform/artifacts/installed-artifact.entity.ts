import { Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn, UpdateDateColumn } from 'typeorm';
import { WorkspaceKeyedEntity } from '../tenancy/tenant-owned.entity';

/**
 * The host's pack registry: every artifact installed for a tenant (node packs, workflow-chain packs,
 * prompt templates, automations...). Written only through artifact installers; read by the tool
 * catalog, proposals and portability.
 */
@Entity({ name: 'installed_artifact' })
@Index('installed_artifact_name_uq', ['tenant', 'workspaceKey', 'kind', 'name'], { unique: true })
@Index('installed_artifact_kind_idx', ['tenant', 'kind'])
export class InstalledArtifactEntity extends WorkspaceKeyedEntity {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ type: 'text' })
  kind: string;

  @Column({ type: 'text' })
  name: string;

  @Column({ type: 'text', nullable: true })
  version: string | null;

  /** `sha256:<hex>` of `bytes`. */
  @Column({ type: 'text' })
  ref: string;

  /** The artifact's JSON text exactly as submitted (what is installed, exported and hashed). */
  @Column({ type: 'text' })
  bytes: string;

  /** A parsed copy of `bytes` for queries (jsonb normalizes key order: never serve it). */
  @Column({ type: 'jsonb' })
  content: Record<string, unknown>;

  /** Where it came from: `proposal:<id>`, `import`, `api`, `directory`... */
  @Column({ type: 'text' })
  origin: string;

  @Column({ name: 'installed_by', type: 'text' })
  installedBy: string;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}
