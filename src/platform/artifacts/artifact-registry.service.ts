import { createHash } from 'node:crypto';
import { Injectable, OnApplicationBootstrap } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import {
  ArtifactInstaller,
  ArtifactInstallerProvider,
  ArtifactViolation,
  InstalledArtifact,
  InstallScope,
} from '@openwop-host/plugin-sdk';
import { collectExtensions, ExtensionMeta } from '../plugins/extension-registry';
import canonicalize from 'canonicalize';
import { DataSource, EntityManager } from 'typeorm';
import { NotFoundError, UnprocessableError, ValidationError } from '../errors/domain-error';
import { withVerbatimText } from '../http/json-text';
import type { TenantScope } from '../identity/principal';
import { InstalledArtifactEntity } from './installed-artifact.entity';
import { InvariantViolation } from '../errors/internal-fault';

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
  if (s === undefined) throw new InvariantViolation('value cannot be canonicalized');
  return s;
}

/** `sha256:<hex>` of an artifact's stored JSON text: the identity of its exact bytes. */
export function textRef(text: string): string {
  return `sha256:${createHash('sha256').update(text, 'utf8').digest('hex')}`;
}

/** The text an artifact is stored as when no submitted text exists: `JSON.stringify` (key order kept). */
export function artifactText(value: unknown): string {
  return JSON.stringify(value);
}

/** The ref `value` gets when installed without submitted text (`textRef(artifactText(value))`). */
export function artifactRef(value: unknown): string {
  return textRef(artifactText(value));
}

export type InstallOutcome = 'created' | 'updated' | 'unchanged';

export interface InstallResult {
  artifact: InstalledArtifact;
  outcome: InstallOutcome;
}

/**
 * The pack registry: installs artifacts through the installer of their kind, storing their JSON
 * text exactly as submitted (plus a jsonb copy for queries), tenant- and workspace-scoped. Every write can join the caller's transaction.
 */
@Injectable()
export class ArtifactRegistryService implements OnApplicationBootstrap {
  private readonly installers = new Map<string, ArtifactInstallerProvider>();

  constructor(
    private readonly ds: DataSource,
    private readonly discovery: DiscoveryService,
  ) {}

  onApplicationBootstrap(): void {
    const found = collectExtensions<ExtensionMeta<typeof ArtifactInstaller>, ArtifactInstallerProvider>(this.discovery, { name: 'artifact installer', metadataKey: ArtifactInstaller.key, key: (meta) => meta.kind });
    for (const { meta, provider } of found) this.installers.set(meta.kind, provider);
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

  /** The installer's read-only destination checks for `content` (none when it has no `preflight`). */
  /** The scopes an artifact of `kind` will act with once installed (its installer's `requiredScopes`), sorted. */
  async requiredScopes(kind: string, content: Record<string, unknown>, scope: InstallScope): Promise<string[]> {
    const needed = (await this.installers.get(kind)?.requiredScopes?.(content, scope)) ?? [];
    return [...new Set(needed)].sort();
  }

  async preflight(kind: string, content: Record<string, unknown>, scope: InstallScope, manager?: EntityManager): Promise<ArtifactViolation[]> {
    return (await this.installer(kind).preflight?.(content, scope, manager ?? this.ds.manager)) ?? [];
  }

  /**
   * Installs (or replaces) an artifact. `text` is its JSON text exactly as submitted (it must parse
   * to `content`); the registry stores those bytes and derives the ref from them. Without it, the
   * text is `JSON.stringify(content)`. Re-installing the same bytes is `unchanged` and keeps the
   * same ref. Malformed content → 422, nothing written.
   */
  async install(kind: string, content: Record<string, unknown>, scope: InstallScope, origin: string, manager?: EntityManager, text?: string): Promise<InstallResult> {
    const installer = this.installer(kind);
    const violations = await installer.validate(content);
    if (violations.length) {
      throw new UnprocessableError('validation_error', `The artifact is malformed for kind "${kind}".`, { kind, violations });
    }
    const { name, version } = installer.identify(content);
    const bytes = text ?? artifactText(content);
    const ref = textRef(bytes);
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

  /**
   * Installs many artifacts of one kind for one scope, with one statement per step for the whole
   * batch: one INSERT ... ON CONFLICT DO NOTHING (new names), one locking SELECT of the names that
   * exist, one UPDATE of those whose bytes changed. The outcomes match `install` per entry (same
   * order): the unique index decides racing installs exactly as it does there. Every entry is
   * validated first: a malformed one → 422 naming its index, nothing written. Names must be
   * distinct within a batch. Runs in `manager`'s transaction (bundle imports) or its own.
   */
  async installMany(kind: string, entries: ReadonlyArray<{ content: Record<string, unknown>; text?: string }>, scope: InstallScope, origin: string, manager?: EntityManager): Promise<InstallResult[]> {
    const installer = this.installer(kind);
    const prepared: Array<{ name: string; version: string | null; bytes: string; ref: string }> = [];
    for (const [index, e] of entries.entries()) {
      const violations = await installer.validate(e.content);
      if (violations.length) {
        throw new UnprocessableError('validation_error', `Artifact #${index} is malformed for kind "${kind}".`, { kind, index, violations });
      }
      const { name, version } = installer.identify(e.content);
      const bytes = e.text ?? artifactText(e.content);
      prepared.push({ name, version: version ?? null, bytes, ref: textRef(bytes) });
    }
    if (new Set(prepared.map((p) => p.name)).size !== prepared.length) throw new InvariantViolation(`installMany: duplicate ${kind} names in one batch`);
    const workspaceKey = scope.workspace ?? '';
    const run = async (m: EntityManager): Promise<InstallResult[]> => {
      // The rows come back without their bytes: the content is the entry's own (same bytes, same
      // content), so nothing is transferred or parsed twice.
      const byName = new Map<string, { row: LeanArtifactRow; outcome: InstallOutcome }>();
      if (!prepared.length) return [];
      const inserted = (await m.query(
        `INSERT INTO "installed_artifact" ("tenant","workspace_key","kind","name","version","ref","bytes","content","origin","installed_by")
         SELECT $1, $2, $3, u.name, u.version, u.ref, u.bytes, u.bytes::jsonb, $4, $5
         FROM unnest($6::text[], $7::text[], $8::text[], $9::text[]) AS u(name, version, ref, bytes)
         ON CONFLICT ("tenant","workspace_key","kind","name") DO NOTHING RETURNING ${LEAN_COLUMNS}`,
        [scope.tenant, workspaceKey, kind, origin, scope.principal, prepared.map((p) => p.name), prepared.map((p) => p.version), prepared.map((p) => p.ref), prepared.map((p) => p.bytes)],
      )) as LeanArtifactRow[];
      for (const row of inserted) byName.set(row.name, { row, outcome: 'created' });
      const rest = prepared.filter((p) => !byName.has(p.name));
      if (rest.length) {
        const current = (await m.query(
          `SELECT ${LEAN_COLUMNS} FROM "installed_artifact"
           WHERE "tenant" = $1 AND "workspace_key" = $2 AND "kind" = $3 AND "name" = ANY($4::text[]) FOR UPDATE`,
          [scope.tenant, workspaceKey, kind, rest.map((p) => p.name)],
        )) as LeanArtifactRow[];
        const currentByName = new Map(current.map((r) => [r.name, r]));
        const changed = rest.filter((p) => currentByName.get(p.name)!.ref !== p.ref);
        for (const p of rest) if (currentByName.get(p.name)!.ref === p.ref) byName.set(p.name, { row: currentByName.get(p.name)!, outcome: 'unchanged' });
        if (changed.length) {
          const updated = (await m.query(
            `UPDATE "installed_artifact" AS a SET "ref" = u.ref, "bytes" = u.bytes, "content" = u.bytes::jsonb, "version" = u.version, "origin" = $1, "installed_by" = $2, "updated_at" = now()
             FROM unnest($3::uuid[], $4::text[], $5::text[], $6::text[]) AS u(id, version, ref, bytes)
             WHERE a."id" = u.id RETURNING ${LEAN_COLUMNS.split(',').map((c) => `a.${c}`).join(',')}`,
            [origin, scope.principal, changed.map((p) => currentByName.get(p.name)!.id), changed.map((p) => p.version), changed.map((p) => p.ref), changed.map((p) => p.bytes)],
          )) as [LeanArtifactRow[], number];
          for (const row of updated[0]) byName.set(row.name, { row, outcome: 'updated' });
        }
      }
      const results = prepared.map((p, i): InstallResult => {
        const { row, outcome } = byName.get(p.name)!;
        const artifact: InstalledArtifact = {
          id: row.id,
          kind,
          name: row.name,
          version: row.version ?? undefined,
          ref: row.ref,
          content: entries[i].content,
          origin: row.origin,
          workspace: scope.workspace || undefined,
          installedBy: row.installed_by,
          createdAt: new Date(row.created_at).toISOString(),
          updatedAt: new Date(row.updated_at).toISOString(),
        };
        return { artifact, outcome };
      });
      const touched = results.filter((r) => r.outcome !== 'unchanged').map((r) => r.artifact);
      if (touched.length) {
        if (installer.afterInstallMany) await installer.afterInstallMany(touched, scope, m);
        else if (installer.afterInstall) for (const a of touched) await installer.afterInstall(a, scope, m);
      }
      return results;
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

  /** The stored bytes: the artifact's JSON text as submitted (for byte-exactness checks). */
  async bytes(scope: TenantScope, kind: string, name: string): Promise<string | undefined> {
    const row = await this.ds.getRepository(InstalledArtifactEntity).findOne({ where: { tenant: scope.tenant, workspaceKey: scope.workspace ?? '', kind, name } });
    return row?.bytes;
  }
}

// `bytes`, not the jsonb copy: parsing the stored text keeps the submitted key order.
const ROW_COLUMNS = '"id","kind","name","version","ref","bytes","origin","workspace_key","installed_by","created_at","updated_at"';

const LEAN_COLUMNS = '"id","name","version","ref","origin","installed_by","created_at","updated_at"';

type LeanArtifactRow = Pick<RawArtifactRow, 'id' | 'name' | 'version' | 'ref' | 'origin' | 'installed_by' | 'created_at' | 'updated_at'>;

interface RawArtifactRow {
  id: string;
  kind: string;
  name: string;
  version: string | null;
  ref: string;
  bytes: string;
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
    // Marked with its source: routes serializing through VerbatimJsonInterceptor emit the stored bytes.
    content: withVerbatimText(JSON.parse(r.bytes) as Record<string, unknown>, r.bytes),
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
    bytes: e.bytes,
    origin: e.origin,
    workspace_key: e.workspaceKey,
    installed_by: e.installedBy,
    created_at: e.createdAt,
    updated_at: e.updatedAt,
  });
}
