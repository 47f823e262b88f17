import { Column, Entity, PrimaryColumn } from 'typeorm';

/**
 * The agent workspace (RFC 0059): a flat, path-addressed file store per tenant·workspace. Each
 * store's rows are keyed by `workspace_key`: the workspace of the credential that wrote them, or ''
 * for a tenant-level credential's own store (its files are not a view over the workspaces' ones).
 */

/** One store: the lock every write of a tenant·workspace takes first, and its live file count (maxFiles). */
@Entity({ name: 'workspace_store' })
export class WorkspaceStoreEntity {
  @PrimaryColumn({ type: 'text', primaryKeyConstraintName: 'workspace_store_pk' })
  tenant: string;

  @PrimaryColumn({ name: 'workspace_key', type: 'text', primaryKeyConstraintName: 'workspace_store_pk' })
  workspaceKey: string;

  @Column({ name: 'file_count', type: 'int', default: 0 })
  fileCount: number;

  /** How many writes the store has taken: the point a run's snapshot is taken at (RFC 0059 §D). */
  @Column({ type: 'bigint', default: 0 })
  revision: string;
}

/**
 * A file's head: its current version, or the tombstone version once deleted (`deleted`), so a file
 * written again after a delete continues its version sequence and an old etag never matches again.
 */
@Entity({ name: 'workspace_file' })
export class WorkspaceFileEntity {
  @PrimaryColumn({ type: 'text', primaryKeyConstraintName: 'workspace_file_pk' })
  tenant: string;

  @PrimaryColumn({ name: 'workspace_key', type: 'text', primaryKeyConstraintName: 'workspace_file_pk' })
  workspaceKey: string;

  @PrimaryColumn({ type: 'text', primaryKeyConstraintName: 'workspace_file_pk' })
  path: string;

  @Column({ type: 'int' })
  version: number;

  @Column({ type: 'boolean', default: false })
  deleted: boolean;

  @Column({ name: 'content_type', type: 'text' })
  contentType: string;

  @Column({ name: 'size_bytes', type: 'int' })
  sizeBytes: number;

  @Column({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}

/** Every retained version of a file, the current one included (`content` null for a tombstone). */
@Entity({ name: 'workspace_file_version' })
export class WorkspaceFileVersionEntity {
  @PrimaryColumn({ type: 'text', primaryKeyConstraintName: 'workspace_file_version_pk' })
  tenant: string;

  @PrimaryColumn({ name: 'workspace_key', type: 'text', primaryKeyConstraintName: 'workspace_file_version_pk' })
  workspaceKey: string;

  @PrimaryColumn({ type: 'text', primaryKeyConstraintName: 'workspace_file_version_pk' })
  path: string;

  @PrimaryColumn({ type: 'int', primaryKeyConstraintName: 'workspace_file_version_pk' })
  version: number;

  @Column({ type: 'text', nullable: true })
  content: string | null;

  @Column({ name: 'content_type', type: 'text' })
  contentType: string;

  @Column({ name: 'size_bytes', type: 'int' })
  sizeBytes: number;

  /** The principal whose write produced this version. */
  @Column({ name: 'written_by', type: 'text' })
  writtenBy: string;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  /** The store's revision this version was written at (0: before snapshots were recorded). */
  @Column({ type: 'bigint', default: 0 })
  revision: string;
}

/**
 * The point of its store a run reads its workspace at (RFC 0059 §D): the store's revision when it
 * started, a fork's copied from its source. No row: revision 0 (the store was empty then).
 */
@Entity({ name: 'workspace_run_snapshot' })
export class WorkspaceRunSnapshotEntity {
  @PrimaryColumn({ type: 'text', primaryKeyConstraintName: 'workspace_run_snapshot_pk' })
  tenant: string;

  @PrimaryColumn({ name: 'run_id', type: 'text', primaryKeyConstraintName: 'workspace_run_snapshot_pk' })
  runId: string;

  @Column({ name: 'workspace_key', type: 'text' })
  workspaceKey: string;

  @Column({ type: 'bigint' })
  revision: string;
}

export const WORKSPACE_ENTITIES = [WorkspaceStoreEntity, WorkspaceFileEntity, WorkspaceFileVersionEntity, WorkspaceRunSnapshotEntity];
