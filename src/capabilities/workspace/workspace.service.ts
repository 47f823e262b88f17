import { Inject, Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { HOST_CONFIG, HostConfig } from '../../platform/config/host-config';
import { checkWorkspaceCeiling, WorkspaceSettings } from '../../platform/config/workspace-settings';
import { NotFoundError, ValidationError } from '../../platform/errors/domain-error';
import type { Principal } from '../../platform/identity/principal';
import { keysetPage } from '../../platform/pagination/keyset';
import type { Page, PageRequest } from '../../platform/pagination/page-query';
import { rowsOf } from '../../platform/database/rows';
import { WorkspaceFileEntity } from './workspace.entities';
import { WorkspaceNotProvidedError, WorkspaceTooLargeError } from './workspace.errors';
import { etagOf, parseEntityTags } from './workspace-path';
import { WorkspaceStore } from './workspace-store';

/** A file's metadata, as the list answers it (`workspace-file.schema.json` without `content`). */
export interface WorkspaceFileMeta {
  path: string;
  contentType: string;
  version: number;
  etag: string;
  updatedAt: string;
}

/** `workspace-file.schema.json`: a file with its content. */
export interface WorkspaceFileView extends WorkspaceFileMeta {
  content: string;
}

export const DEFAULT_CONTENT_TYPE = 'text/markdown';

/**
 * The agent workspace (RFC 0059 §C): a flat file store per tenant·workspace. A caller reaches only
 * the store of its own credential's tenant and workspace (a tenant-level credential has its own
 * store; it is not a view over its workspaces' ones), so another store's file answers exactly like
 * a file that does not exist (WCT-1).
 */
@Injectable()
export class WorkspaceService {
  readonly settings: WorkspaceSettings;

  constructor(
    private readonly ds: DataSource,
    private readonly store: WorkspaceStore,
    @Inject(HOST_CONFIG) config: HostConfig,
  ) {
    this.settings = config.workspace;
    checkWorkspaceCeiling(this.settings, config);
  }

  /** Every route's first step: a host that does not serve the store says so (RFC 0059: 501 capability_not_provided). */
  assertServed(): void {
    if (!this.settings.enabled) throw new WorkspaceNotProvidedError();
  }

  async list(p: Principal, q: PageRequest & { prefix?: string }): Promise<Page<WorkspaceFileMeta>> {
    this.assertServed();
    const qb = this.ds
      .getRepository(WorkspaceFileEntity)
      .createQueryBuilder('f')
      .where('f.tenant = :tenant AND f.workspace_key = :key AND f.deleted = false', { tenant: p.tenant, key: p.workspace ?? '' });
    if (q.prefix) qb.andWhere('left(f.path, :prefixLength) = :prefix', { prefix: q.prefix, prefixLength: q.prefix.length });
    // Without a limit the whole store is one page (it holds at most maxFiles), as a client of the closed RFC 0059 list expects.
    const page = await keysetPage(qb, { limit: q.limit ?? this.settings.maxFiles, cursor: q.cursor }, {
      keys: [{ column: 'f.path', type: 'text' }],
      direction: 'ASC',
      binding: { list: 'workspace-files', tenant: p.tenant, workspace: p.workspace, filters: { prefix: q.prefix } },
    });
    return { items: page.items.map(metaOf), nextCursor: page.nextCursor };
  }

  async read(p: Principal, path: string, version?: number): Promise<WorkspaceFileView> {
    this.assertServed();
    const params: unknown[] = [p.tenant, p.workspace ?? '', path];
    if (version !== undefined) params.push(version);
    const [row] = rowsOf<{ version: number; content: string | null; content_type: string; created_at: Date }>(
      await this.ds.query(
        `SELECT v."version", v."content", v."content_type", v."created_at" FROM "workspace_file" f
         JOIN "workspace_file_version" v ON v."tenant" = f."tenant" AND v."workspace_key" = f."workspace_key" AND v."path" = f."path" AND v."version" = ${version === undefined ? 'f."version"' : '$4'}
         WHERE f."tenant" = $1 AND f."workspace_key" = $2 AND f."path" = $3 AND NOT f."deleted"`,
        params,
      ),
    );
    if (!row || row.content === null) throw new NotFoundError(version === undefined ? 'No such workspace file.' : 'No such workspace file version (never written, deleted, or older than the retained workspace.maxVersions).');
    return { path, content: row.content, contentType: row.content_type, version: Number(row.version), etag: etagOf(Number(row.version)), updatedAt: row.created_at.toISOString() };
  }

  async write(p: Principal, path: string, body: { content: string; contentType?: string }, headers: { ifMatch?: string; ifNoneMatch?: string }): Promise<WorkspaceFileView> {
    this.assertServed();
    const ifMatch = parseEntityTags(headers.ifMatch, 'If-Match');
    const ifNoneMatch = parseEntityTags(headers.ifNoneMatch, 'If-None-Match');
    if (ifNoneMatch !== undefined && ifNoneMatch !== '*') throw new ValidationError('If-None-Match on a workspace PUT may only be * (create only).', { fields: ['If-None-Match'] });
    const sizeBytes = Buffer.byteLength(body.content, 'utf8');
    if (sizeBytes > this.settings.maxFileBytes) {
      throw new WorkspaceTooLargeError(`The content is ${sizeBytes} bytes, over the ${this.settings.maxFileBytes}-byte ceiling (workspace.maxFileBytes).`, { maxFileBytes: this.settings.maxFileBytes, sizeBytes });
    }
    const contentType = body.contentType ?? DEFAULT_CONTENT_TYPE;
    const w = await this.store.put(p, this.settings, path, { content: body.content, contentType, sizeBytes }, { ifMatch, createOnly: ifNoneMatch === '*' });
    return { path, content: body.content, contentType, version: w.version, etag: etagOf(w.version), updatedAt: w.updatedAt.toISOString() };
  }

  async remove(p: Principal, path: string, headers: { ifMatch?: string }): Promise<void> {
    this.assertServed();
    await this.store.remove(p, this.settings, path, { ifMatch: parseEntityTags(headers.ifMatch, 'If-Match') });
  }
}

function metaOf(f: WorkspaceFileEntity): WorkspaceFileMeta {
  return { path: f.path, contentType: f.contentType, version: f.version, etag: etagOf(f.version), updatedAt: f.updatedAt.toISOString() };
}
