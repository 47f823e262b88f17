import { createHash } from 'node:crypto';
import { Injectable, OnApplicationBootstrap } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import {
  ArtifactInstaller,
  ArtifactInstallerProvider,
  ArtifactViolation,
  extensionMetadata,
  InstalledArtifact,
  InstallScope,
} from '@openwop-host/plugin-sdk';
import canonicalize from 'canonicalize';
import { DataSource, EntityManager } from 'typeorm';
import { NotFoundError, UnprocessableError, ValidationError } from '../errors/domain-error';
import type { TenantScope } from '../identity/principal';
import { InstalledArtifactEntity } from './installed-artifact.entity';

/** RFC 8785 (JCS) canonical JSON text of a value. */
export function canonicalJson(value: unknown): string {
  let s: string | undefined;
  try {
    s = canonicalize(value);
  } catch (e) {
    // The library recurses. HTTP bodies are depth-limited before they get here (platform/http/json-guard);
    // anything else too deep to serialize is refused as input, never a stack overflow answered as a 500.
    if (e instanceof RangeError) throw new ValidationError('The document nests too deeply to be canonicalized.');
    throw e;
  }
  if (s === undefined) throw new Error('value cannot be canonicalized');
  return s;
}

/** `sha256:<hex>` of the canonical bytes: the identity of an artifact's exact content. */
export function artifactRef(value: unknown): string {
  return `sha256:${createHash('sha256').update(canonicalJson(value), 'utf8').digest('hex')}`;
}

export type InstallOutcome = 'created' | 'updated' | 'unchanged';

export interface InstallResult {
  artifact: InstalledArtifact;
  outcome: InstallOutcome;
}

/**
 * The pack registry: installs artifacts through the installer of their kind, storing the exact
 * canonical bytes, tenant- and workspace-scoped. Every write can join the caller's transaction.
 */
@Injectable()
export class ArtifactRegistryService implements OnApplicationBootstrap {
  private readonly installers = new Map<string, ArtifactInstallerProvider>();

  constructor(
    private readonly ds: DataSource,
    private readonly discovery: DiscoveryService,
  ) {}

  onApplicationBootstrap(): void {
    for (const wrapper of this.discovery.getProviders()) {
      const meta = extensionMetadata(ArtifactInstaller, wrapper.metatype ?? undefined);
      if (!meta || !wrapper.instance) continue;
      if (this.installers.has(meta.kind)) throw new Error(`two artifact installers claim kind "${meta.kind}"`);
      this.installers.set(meta.kind, wrapper.instance as ArtifactInstallerProvider);
    }
  }

  /** The kinds that have an installer (what can be installed, applied or imported). */
  kinds(): string[] {
    return [...this.installers.keys()].sort();
  }

  hasKind(kind: string): boolean {
    return this.installers.has(kind);
  }

  private installer(kind: string): ArtifactInstallerProvider {
    const i = this.installers.get(kind);
    if (!i) throw new UnprocessableError('validation_error', `No installer for artifact kind "${kind}".`, { kind });
    return i;
  }

  /** The registry name and version `content` would be installed under, or undefined without an installer for `kind`. */
  identify(kind: string, content: Record<string, unknown>): { name: string; version?: string } | undefined {
    return this.installers.get(kind)?.identify(content);
  }

  async validate(kind: string, content: unknown): Promise<ArtifactViolation[]> {
    if (!content || typeof content !== 'object' || Array.isArray(content)) return [{ path: '', message: 'must be an object' }];
    return this.installer(kind).validate(content as Record<string, unknown>);
  }

  /**
   * Installs (or replaces) an artifact. Re-installing the same bytes is `unchanged` and keeps the
   * same ref. Malformed content → 422, nothing written.
   */
  async install(kind: string, content: Record<string, unknown>, scope: InstallScope, origin: string, manager?: EntityManager): Promise<InstallResult> {
    const installer = this.installer(kind);
    const violations = await installer.validate(content);
    if (violations.length) {
      throw new UnprocessableError('validation_error', `The artifact is malformed for kind "${kind}".`, { kind, violations });
    }
    const { name, version } = installer.identify(content);
    const bytes = canonicalJson(content);
    const ref = artifactRef(content);
    const run = async (m: EntityManager): Promise<InstallResult> => {
      const workspaceKey = scope.workspace ?? '';
      // The unique index decides between racing installs: exactly one insert wins, the others
      // lock the winner's row and compare bytes. Every statement returns the row, so an install
      // costs one round trip when new and two otherwise.
      const inserted = (await m.query(
        `INSERT INTO "installed_artifact" ("tenant","workspace_key","kind","name","version","ref","bytes","content","origin","installed_by")
         VALUES ($1,$2,$3,$4,$5,$6,$7,$8::jsonb,$9,$10)
         ON CONFLICT ("tenant","workspace_key","kind","name") DO NOTHING RETURNING ${ROW_COLUMNS}`,
        [scope.tenant, workspaceKey, kind, name, version ?? null, ref, bytes, bytes, origin, scope.principal],
      )) as RawArtifactRow[];
      let outcome: InstallOutcome = 'created';
      let row = inserted[0];
      if (!row) {
        const [current] = (await m.query(
          `SELECT ${ROW_COLUMNS} FROM "installed_artifact"
           WHERE "tenant" = $1 AND "workspace_key" = $2 AND "kind" = $3 AND "name" = $4 FOR UPDATE`,
          [scope.tenant, workspaceKey, kind, name],
        )) as RawArtifactRow[];
        outcome = current.ref === ref ? 'unchanged' : 'updated';
        row = current;
        if (outcome === 'updated') {
          const updated = (await m.query(
            `UPDATE "installed_artifact" SET "ref" = $2, "bytes" = $3, "content" = $4::jsonb, "version" = $5, "origin" = $6, "installed_by" = $7, "updated_at" = now()
             WHERE "id" = $1 RETURNING ${ROW_COLUMNS}`,
            [current.id, ref, bytes, bytes, version ?? null, origin, scope.principal],
          )) as [RawArtifactRow[], number];
          row = updated[0][0];
        }
      }
      const artifact = rawToArtifact(row);
      if (outcome !== 'unchanged') await installer.afterInstall?.(artifact, scope, m);
      return { artifact, outcome };
    };
    return manager ? run(manager) : this.ds.transaction(run);
  }

  async uninstall(scope: TenantScope & { principal: string }, kind: string, name: string, manager?: EntityManager): Promise<InstalledArtifact> {
    const run = async (m: EntityManager) => {
      const repo = m.getRepository(InstalledArtifactEntity);
      const row = await repo.findOne({ where: { tenant: scope.tenant, workspaceKey: scope.workspace ?? '', kind, name } });
      if (!row) throw new NotFoundError('No such artifact.');
      await repo.delete({ id: row.id });
      const artifact = toArtifact(row);
      await this.installers.get(kind)?.afterUninstall?.(artifact, { tenant: scope.tenant, workspace: scope.workspace, principal: scope.principal }, m);
      return artifact;
    };
    return manager ? run(manager) : this.ds.transaction(run);
  }

  /**
   * Artifacts visible to a scope: the tenant's own (workspace-less) artifacts plus, when the scope
   * has a workspace, that workspace's. Optionally of some kinds only.
   */
  async list(scope: TenantScope, kinds?: string[], manager?: EntityManager): Promise<InstalledArtifact[]> {
    const qb = (manager ?? this.ds.manager)
      .getRepository(InstalledArtifactEntity)
      .createQueryBuilder('a')
      .where('a.tenant = :t', { t: scope.tenant })
      .andWhere('a.workspace_key IN (:...w)', { w: scope.workspace ? ['', scope.workspace] : [''] })
      .orderBy('a.kind', 'ASC')
      .addOrderBy('a.name', 'ASC');
    if (kinds?.length) qb.andWhere('a.kind IN (:...k)', { k: kinds });
    return (await qb.getMany()).map(toArtifact);
  }

  async get(scope: TenantScope, kind: string, name: string, manager?: EntityManager): Promise<InstalledArtifact | undefined> {
    const row = await (manager ?? this.ds.manager)
      .getRepository(InstalledArtifactEntity)
      .findOne({ where: { tenant: scope.tenant, workspaceKey: scope.workspace ?? '', kind, name } });
    return row ? toArtifact(row) : undefined;
  }

  /** The stored canonical bytes (for byte-exactness checks and export). */
  async bytes(scope: TenantScope, kind: string, name: string): Promise<string | undefined> {
    const row = await this.ds.getRepository(InstalledArtifactEntity).findOne({ where: { tenant: scope.tenant, workspaceKey: scope.workspace ?? '', kind, name } });
    return row?.bytes;
  }
}

const ROW_COLUMNS = '"id","kind","name","version","ref","content","origin","workspace_key","installed_by","created_at","updated_at"';

interface RawArtifactRow {
  id: string;
  kind: string;
  name: string;
  version: string | null;
  ref: string;
  content: Record<string, unknown>;
  origin: string;
  workspace_key: string;
  installed_by: string;
  created_at: Date;
  updated_at: Date;
}

function rawToArtifact(r: RawArtifactRow): InstalledArtifact {
  return {
    id: r.id,
    kind: r.kind,
    name: r.name,
    version: r.version ?? undefined,
    ref: r.ref,
    content: r.content,
    origin: r.origin,
    workspace: r.workspace_key || undefined,
    installedBy: r.installed_by,
    createdAt: new Date(r.created_at).toISOString(),
    updatedAt: new Date(r.updated_at).toISOString(),
  };
}

function toArtifact(e: InstalledArtifactEntity): InstalledArtifact {
  return rawToArtifact({
    id: e.id,
    kind: e.kind,
    name: e.name,
    version: e.version,
    ref: e.ref,
    content: e.content,
    origin: e.origin,
    workspace_key: e.workspaceKey,
    installed_by: e.installedBy,
    created_at: e.createdAt,
    updated_at: e.updatedAt,
  });
}
