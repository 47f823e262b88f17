import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { AuditLogService, auditActor } from '../../platform/audit/audit-log.service';
import { NotFoundError } from '../../platform/errors/domain-error';
import { EventLogService, HOST_STREAM } from '../../platform/events/event-log.service';
import type { Principal } from '../../platform/identity/principal';
import { rowsOf } from '../../platform/database/rows';
import type { WorkspaceSettings } from '../../platform/config/workspace-settings';
import { WorkspaceConflictError, WorkspaceTooLargeError } from './workspace.errors';
import { etagOf } from './workspace-path';

/** The conditions of a write (RFC 0059 §C): `If-Match` as `*` or strong tags, `If-None-Match: *`. */
export interface WritePreconditions {
  ifMatch?: '*' | string[];
  createOnly?: boolean;
}

/** What a write produced: the new version and when it was written. */
export interface WrittenVersion {
  version: number;
  updatedAt: Date;
}

interface Head {
  version: number;
  deleted: boolean;
}

/**
 * The one writer of the workspace tables. Every write of a tenant·workspace first locks its
 * `workspace_store` row, so writes to one store are serialized across replicas (the file count stays
 * within maxFiles, a precondition is checked against the version it replaces), and a write is one
 * transaction: the version row, the head, the pruning of old versions, the `workspace.updated`
 * event and the audit entry commit together or not at all. A reader reads head and version in one
 * statement, so it sees the version before or after a write, never a part of one.
 */
@Injectable()
export class WorkspaceStore {
  constructor(
    private readonly ds: DataSource,
    private readonly events: EventLogService,
    private readonly audit: AuditLogService,
  ) {}

  async put(p: Principal, s: WorkspaceSettings, path: string, file: { content: string; contentType: string; sizeBytes: number }, pre: WritePreconditions): Promise<WrittenVersion> {
    return this.ds.transaction(async (m) => {
      const key = p.workspace ?? '';
      const { fileCount, revision } = await this.lockStore(m, p.tenant, key);
      const head = await this.head(m, p.tenant, key, path);
      const live = head !== undefined && !head.deleted;
      checkPreconditions(path, live ? head.version : 0, pre);
      if (!live) {
        if (fileCount >= s.maxFiles) throw new WorkspaceTooLargeError(`The workspace holds ${fileCount} files, its ceiling (workspace.maxFiles); delete one first.`, { maxFiles: s.maxFiles });
        await m.query(`UPDATE "workspace_store" SET "file_count" = "file_count" + 1 WHERE "tenant" = $1 AND "workspace_key" = $2`, [p.tenant, key]);
      }
      const version = (head?.version ?? 0) + 1;
      const [row] = rowsOf<{ updated_at: Date }>(
        await m.query(
          `INSERT INTO "workspace_file" ("tenant", "workspace_key", "path", "version", "deleted", "content_type", "size_bytes", "updated_at") VALUES ($1, $2, $3, $4, false, $5, $6, now())
           ON CONFLICT ("tenant", "workspace_key", "path") DO UPDATE SET "version" = EXCLUDED."version", "deleted" = false, "content_type" = EXCLUDED."content_type", "size_bytes" = EXCLUDED."size_bytes", "updated_at" = EXCLUDED."updated_at"
           RETURNING "updated_at"`,
          [p.tenant, key, path, version, file.contentType, file.sizeBytes],
        ),
      );
      await this.addVersion(m, p, key, path, version, file.content, file.contentType, file.sizeBytes, row.updated_at, s.maxVersions, revision);
      await this.record(m, p, path, version, 'workspace.file-written', { sizeBytes: file.sizeBytes, created: !live });
      return { version, updatedAt: row.updated_at };
    });
  }

  /** Deletes a file: its head becomes a tombstone version (so its version sequence continues), its history ages out as usual. */
  async remove(p: Principal, s: WorkspaceSettings, path: string, pre: WritePreconditions): Promise<WrittenVersion> {
    return this.ds.transaction(async (m) => {
      const key = p.workspace ?? '';
      const { revision } = await this.lockStore(m, p.tenant, key);
      const head = await this.head(m, p.tenant, key, path);
      if (!head || head.deleted) throw new NotFoundError('No such workspace file.');
      checkPreconditions(path, head.version, pre);
      const version = head.version + 1;
      const [row] = rowsOf<{ updated_at: Date }>(
        await m.query(
          `UPDATE "workspace_file" SET "version" = $4, "deleted" = true, "size_bytes" = 0, "updated_at" = now() WHERE "tenant" = $1 AND "workspace_key" = $2 AND "path" = $3 RETURNING "updated_at"`,
          [p.tenant, key, path, version],
        ),
      );
      await m.query(`UPDATE "workspace_store" SET "file_count" = "file_count" - 1 WHERE "tenant" = $1 AND "workspace_key" = $2`, [p.tenant, key]);
      await this.addVersion(m, p, key, path, version, null, 'application/octet-stream', 0, row.updated_at, s.maxVersions, revision);
      await this.record(m, p, path, version, 'workspace.file-deleted', {});
      return { version, updatedAt: row.updated_at };
    });
  }

  /**
   * Takes the store's lock (creating its row on the first write) and counts the write in its
   * `revision` (RFC 0059 §D: a run's snapshot is a revision); answers its live file count and the
   * revision of this write. A snapshot reads the revision without the lock: before this write
   * commits it reads the one before, and the version rows of this write are not visible either.
   */
  private async lockStore(m: EntityManager, tenant: string, key: string): Promise<{ fileCount: number; revision: number }> {
    await m.query(`INSERT INTO "workspace_store" ("tenant", "workspace_key", "file_count") VALUES ($1, $2, 0) ON CONFLICT DO NOTHING`, [tenant, key]);
    const [row] = rowsOf<{ file_count: number; revision: string }>(
      await m.query(`UPDATE "workspace_store" SET "revision" = "revision" + 1 WHERE "tenant" = $1 AND "workspace_key" = $2 RETURNING "file_count", "revision"`, [tenant, key]),
    );
    return { fileCount: Number(row.file_count), revision: Number(row.revision) };
  }

  /**
   * Records the point of its store a run reads its workspace at (RFC 0059 §D), once: the store's
   * current revision, or a fork's source's point (`fromRunId`; the source's store, whatever the
   * fork's owner). Nothing is written when there is nothing to pin (no store yet, or a source
   * without a point): no row reads as revision 0, the empty store. A second call keeps the first point.
   */
  /** Retention: the snapshot points of deleted runs go with them (relation `runs`: "tenant", "id"; a part of its batch statement). */
  purgeRunsSql(runs: string): string {
    return `DELETE FROM "workspace_run_snapshot" s USING ${runs} d WHERE s."tenant" = d."tenant" AND s."run_id" = d."id"::text RETURNING 1`;
  }

  async pinRun(run: { tenant: string; workspaceKey: string; runId: string; fromRunId?: string }): Promise<void> {
    if (run.fromRunId !== undefined) {
      await this.ds.query(
        `INSERT INTO "workspace_run_snapshot" ("tenant", "run_id", "workspace_key", "revision") SELECT "tenant", $2, "workspace_key", "revision" FROM "workspace_run_snapshot" WHERE "tenant" = $1 AND "run_id" = $3 ON CONFLICT DO NOTHING`,
        [run.tenant, run.runId, run.fromRunId],
      );
      return;
    }
    await this.ds.query(
      `INSERT INTO "workspace_run_snapshot" ("tenant", "run_id", "workspace_key", "revision") SELECT "tenant", $3, "workspace_key", "revision" FROM "workspace_store" WHERE "tenant" = $1 AND "workspace_key" = $2 AND "revision" > 0 ON CONFLICT DO NOTHING`,
      [run.tenant, run.workspaceKey, run.runId],
    );
  }

  private async head(m: EntityManager, tenant: string, key: string, path: string): Promise<Head | undefined> {
    const [row] = rowsOf<{ version: number; deleted: boolean }>(await m.query(`SELECT "version", "deleted" FROM "workspace_file" WHERE "tenant" = $1 AND "workspace_key" = $2 AND "path" = $3`, [tenant, key, path]));
    return row ? { version: Number(row.version), deleted: row.deleted } : undefined;
  }

  private async addVersion(m: EntityManager, p: Principal, key: string, path: string, version: number, content: string | null, contentType: string, sizeBytes: number, at: Date, maxVersions: number, revision: number): Promise<void> {
    await m.query(
      `INSERT INTO "workspace_file_version" ("tenant", "workspace_key", "path", "version", "content", "content_type", "size_bytes", "written_by", "created_at", "revision") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
      [p.tenant, key, path, version, content, contentType, sizeBytes, p.principal, at, revision],
    );
    // The latest maxVersions versions are kept, the one just written among them.
    await m.query(`DELETE FROM "workspace_file_version" WHERE "tenant" = $1 AND "workspace_key" = $2 AND "path" = $3 AND "version" <= $4`, [p.tenant, key, path, version - maxVersions]);
  }

  /** The content-free `workspace.updated` event (on the tenant's host stream) and the audit entry of a write. */
  private async record(m: EntityManager, p: Principal, path: string, version: number, action: 'workspace.file-written' | 'workspace.file-deleted', details: Record<string, number | boolean>): Promise<void> {
    const scope = { tenant: p.tenant, ...(p.workspace ? { workspace: p.workspace } : {}) };
    await this.events.append(scope, HOST_STREAM, 'workspace.updated', { path, version }, { manager: m });
    await this.audit.record(m, {
      tenant: p.tenant,
      workspace: p.workspace,
      actor: auditActor(p),
      action,
      resource: { type: 'workspace-file', id: path },
      details: { version, ...details },
    });
  }
}

function checkPreconditions(path: string, current: number, pre: WritePreconditions): void {
  if (pre.createOnly && current > 0) throw new WorkspaceConflictError(current, `${path} exists (If-None-Match: *).`);
  if (pre.ifMatch === undefined) return;
  if (current === 0) throw new WorkspaceConflictError(0, `${path} does not exist, so no If-Match can match it.`);
  if (pre.ifMatch !== '*' && !pre.ifMatch.includes(etagOf(current))) throw new WorkspaceConflictError(current, `${path} changed: its current version is ${current}. Read it again and retry with its etag.`);
}
