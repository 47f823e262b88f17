import { Injectable, OnModuleInit } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { NodeExecutionError, type NodeExecutionContext, type NodeWorkspace, type NodeWorkspaceFile, type NodeWorkspaceFileMeta } from '@openwop-host/plugin-sdk';
import { rowsOf } from '../../platform/database/rows';
import { RetentionService } from '../../platform/retention/retention.service';
import { etagOf, workspacePath, WORKSPACE_PREFIX_PATTERN } from './workspace-path';
import { WorkspaceService } from './workspace.service';
import { WorkspaceStore } from './workspace-store';

/** The run a snapshot belongs to: its owner's tenant and workspace, and the run a fork was made from. */
export interface SnapshotRun {
  tenant: string;
  workspace?: string | null;
  id: string;
  metadata?: Record<string, unknown> | null;
  /** Its workflow definition: a run none of whose nodes can read the workspace records no point. */
  definition?: unknown;
}

interface Point {
  key: string;
  revision: number;
}

interface VersionRow {
  path: string;
  version: number;
  content: string | null;
  content_type: string;
  created_at: Date;
  tombstone?: boolean;
}

const UNAVAILABLE = 'workspace_snapshot_unavailable';

/**
 * A run's read snapshot of its workspace (RFC 0059 §D). When a run starts, the revision of its
 * owner's store is recorded with the run (`workspace_run_snapshot`; a fork or replay records its
 * source's point instead), so every read of the run, on any replica and after any resume, answers
 * the files as of that revision: for each path, its newest retained version written at or before it.
 *
 * The store keeps the newest `maxVersions` versions of each file and a snapshot does not hold older
 * ones back: when a file was rewritten more than `maxVersions` times since the snapshot, its version
 * of then is gone and the read fails `workspace_snapshot_unavailable` (a path whose retained history
 * starts after the snapshot, above version 1, is such a file) rather than answer other content.
 */
@Injectable()
export class WorkspaceSnapshots implements OnModuleInit {
  constructor(
    private readonly ds: DataSource,
    private readonly store: WorkspaceStore,
    private readonly workspace: WorkspaceService,
    private readonly retention: RetentionService,
  ) {}

  /** A run's snapshot point is deleted with the run (retention). */
  onModuleInit(): void {
    this.retention.registerRunPurger({ counts: 'workspaceSnapshots', deletes: (runs) => this.store.purgeRunsSql(runs) });
  }

  /**
   * Records the run's snapshot point: at its first start, or for a fork (from its source) at its first execution.
   * A run started before its own insert (an eager start: `eager.inserted` settles with the insert's answer) is
   * pinned right after that insert commits, not before it: a create that turns out to be a replay or a conflict
   * inserts no run and so leaves no point behind, and the create's own round trips stay the insert's. Its reads
   * first have the insert written (`bind`'s `afterInsert`), then wait for the point.
   */
  async pin(run: SnapshotRun, firstStart: boolean, eager?: { inserted: Promise<{ inserted: boolean }> }): Promise<void> {
    if (!this.workspace.settings.enabled) return;
    const fromRunId = sourceOf(run);
    if (!firstStart && fromRunId === undefined) return;
    if (!mayReadWorkspace(run.definition)) return;
    const at = { tenant: run.tenant, workspaceKey: run.workspace ?? '', runId: run.id, fromRunId };
    if (eager && firstStart && fromRunId === undefined) {
      const pinned = eager.inserted.then((o) => (o.inserted ? this.store.pinRun(at) : undefined));
      this.pending.set(run.id, pinned);
      // Its failure is reported by the run's reads, which await it; forgotten once settled.
      void pinned.catch(() => undefined).finally(() => this.pending.get(run.id) === pinned && this.pending.delete(run.id));
      return;
    }
    await this.store.pinRun(at);
  }

  /** Points of eager starts still being recorded after their insert (by run id). */
  private readonly pending = new Map<string, Promise<void>>();

  /**
   * Gives a node's context its `ctx.workspace` (nothing while the host does not serve the workspace); `afterInsert`
   * runs a read once the run row exists (an eager start writes its insert first).
   */
  bind(ctx: NodeExecutionContext, run: SnapshotRun, afterInsert?: <R>(work: () => Promise<R>) => Promise<R>): void {
    if (!this.workspace.settings.enabled) return;
    ctx.workspace = this.forRun(run, afterInsert);
  }

  /** The snapshot of one run (its point read once, on first use). */
  forRun(run: SnapshotRun, afterInsert: <R>(work: () => Promise<R>) => Promise<R> = (work) => work()): NodeWorkspace {
    let point: Promise<Point> | undefined;
    const at = () => (point ??= afterInsert(async () => {
      // Not recorded for a run whose nodes are all built-ins that never read it (mayReadWorkspace): loud, never empty.
      if (!mayReadWorkspace(run.definition)) throw new NodeExecutionError('workspace_snapshot_unavailable', 'This run recorded no workspace snapshot point: none of its node types reads the workspace.', { service: 'workspace' });
      await this.pending.get(run.id);
      return this.point(run);
    }));
    return {
      get: async (path) => this.get(await at(), run.tenant, checked(() => workspacePath(path))),
      list: async (prefix) => {
        if (prefix !== undefined && (typeof prefix !== 'string' || !WORKSPACE_PREFIX_PATTERN.test(prefix))) {
          throw new NodeExecutionError('invalid_arguments', 'ctx.workspace.list prefix must be up to 256 letters, digits or . _ / -.', { service: 'workspace' });
        }
        return this.list(await at(), run.tenant, prefix || undefined);
      },
    };
  }

  private async point(run: SnapshotRun): Promise<Point> {
    const [row] = rowsOf<{ workspace_key: string; revision: string }>(
      await this.ds.query(`SELECT "workspace_key", "revision" FROM "workspace_run_snapshot" WHERE "tenant" = $1 AND "run_id" = $2`, [run.tenant, run.id]),
    );
    return row ? { key: row.workspace_key, revision: Number(row.revision) } : { key: run.workspace ?? '', revision: 0 };
  }

  private async get(at: Point, tenant: string, path: string): Promise<NodeWorkspaceFile | null> {
    const [row] = rowsOf<VersionRow>(
      await this.ds.query(
        `SELECT "path", "version", "content", "content_type", "created_at" FROM "workspace_file_version"
         WHERE "tenant" = $1 AND "workspace_key" = $2 AND "path" = $3 AND "revision" <= $4 ORDER BY "version" DESC LIMIT 1`,
        [tenant, at.key, path, at.revision],
      ),
    );
    if (row) return row.content === null ? null : { ...metaOf(row), content: row.content };
    // Nothing at or before the point: the file did not exist then, unless its older versions were pruned.
    const [later] = rowsOf<{ oldest: number | null }>(
      await this.ds.query(`SELECT min("version") AS "oldest" FROM "workspace_file_version" WHERE "tenant" = $1 AND "workspace_key" = $2 AND "path" = $3`, [tenant, at.key, path]),
    );
    if (later && later.oldest !== null && Number(later.oldest) > 1) throw unavailable(path);
    return null;
  }

  private async list(at: Point, tenant: string, prefix: string | undefined): Promise<NodeWorkspaceFileMeta[]> {
    const params: unknown[] = [tenant, at.key, at.revision];
    const byPrefix = prefix ? (params.push(prefix), `AND left("path", length($4)) = $4`) : '';
    const [pruned] = rowsOf<{ path: string }>(
      await this.ds.query(
        `SELECT "path" FROM "workspace_file_version" WHERE "tenant" = $1 AND "workspace_key" = $2 ${byPrefix}
         GROUP BY "path" HAVING min("revision") > $3 AND min("version") > 1 ORDER BY "path" LIMIT 1`,
        params,
      ),
    );
    if (pruned) throw unavailable(pruned.path);
    const rows = rowsOf<VersionRow>(
      await this.ds.query(
        `SELECT DISTINCT ON ("path") "path", "version", "content" IS NULL AS "tombstone", '' AS "content", "content_type", "created_at" FROM "workspace_file_version"
         WHERE "tenant" = $1 AND "workspace_key" = $2 AND "revision" <= $3 ${byPrefix} ORDER BY "path", "version" DESC`,
        params,
      ),
    );
    return rows.filter((r) => !r.tombstone).map(metaOf);
  }
}

/**
 * Whether a node of the definition (or an inverse action of one) can read `ctx.workspace`: `core.workspace.read`,
 * or any node type that is not a host built-in (`core.*`; a plugin's executor may read it). The other built-ins never
 * do, so a run made only of them has no snapshot anyone could observe and records none: its start costs no statement.
 * A definition the host cannot read counts as reading (the point is recorded; the run fails elsewhere).
 */
export function mayReadWorkspace(definition: unknown): boolean {
  const nodes = (definition as { nodes?: unknown } | null | undefined)?.nodes;
  if (!Array.isArray(nodes)) return true;
  const reads = (typeId: unknown) => typeof typeId !== 'string' || typeId === 'core.workspace.read' || !typeId.startsWith('core.');
  return nodes.some((n: { typeId?: unknown; compensation?: { nodeTypeId?: unknown } } | null) => {
    if (!n || typeof n !== 'object') return true;
    return reads(n.typeId) || (n.compensation !== undefined && n.compensation !== null && reads(n.compensation.nodeTypeId));
  });
}

function sourceOf(run: SnapshotRun): string | undefined {
  const fork = run.metadata?.fork as { sourceRunId?: unknown } | undefined;
  return typeof fork?.sourceRunId === 'string' ? fork.sourceRunId : undefined;
}

function metaOf(r: VersionRow): NodeWorkspaceFileMeta {
  const version = Number(r.version);
  return { path: r.path, contentType: r.content_type, version, etag: etagOf(version), updatedAt: new Date(r.created_at).toISOString() };
}

function checked<T>(f: () => T): T {
  try {
    return f();
  } catch (e) {
    throw new NodeExecutionError('invalid_arguments', `ctx.workspace: ${(e as Error).message}`, { service: 'workspace' });
  }
}

function unavailable(path: string): NodeExecutionError {
  return new NodeExecutionError(UNAVAILABLE, `The version of ${path} this run's workspace snapshot holds is no longer retained (the store keeps the newest workspace.maxVersions of each file).`, { service: 'workspace', path });
}
