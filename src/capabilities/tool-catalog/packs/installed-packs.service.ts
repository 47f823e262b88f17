import { Injectable } from '@nestjs/common';
import type { InstalledArtifact } from '@openwop-host/plugin-sdk';
import { DataSource } from 'typeorm';
import { ArtifactRegistryService, InstallOutcome } from '../../../platform/artifacts/artifact-registry.service';
import { InstallChecks, InstallProblem } from '../../../platform/artifacts/install-checks';
import { ForbiddenError, NotFoundError, UnprocessableError } from '../../../platform/errors/domain-error';
import { UUID } from '../../../platform/ids';
import type { Principal, TenantScope } from '../../../platform/identity/principal';
import { NODE_PACK_KIND, WORKFLOW_CHAIN_PACK_KIND } from '../installers/pack-installers';

/** The registry `origin` of packs installed through `POST /v1/installed-packs` (and `openwop-host packs install`). */
export const DIRECT_ORIGIN = 'api';

/** The 422 code of a pack refused at a direct install, with `details.problems`. */
export const PACK_INVALID = 'pack_invalid';

export type PackKind = 'workflow-chain' | 'node';

/** An installed pack as the routes show it (never its manifest: that is the pack registry's). */
export interface InstalledPackView {
  id: string;
  kind: PackKind;
  name: string;
  version?: string;
  /** `sha256:<hex>` of the installed bytes (the manifest's JSON text as submitted). */
  ref: string;
  /** The workspace it belongs to; absent: the whole tenant. */
  workspace?: string;
  /** Where it came from: `api` (this route), `proposal:<id>`, `import`. */
  origin: string;
  installedBy: string;
  installedAt: string;
  updatedAt: string;
  /** A workflow-chain pack's chains (what `POST /v1/runs` starts by `workflowId`). */
  chains?: Array<{ chainId: string; version?: string; label?: string }>;
  /** A node pack's node types. */
  nodeTypes?: string[];
}

const REGISTRY_KIND: Record<PackKind, string> = { 'workflow-chain': WORKFLOW_CHAIN_PACK_KIND, node: NODE_PACK_KIND };
const PACK_KIND_OF: Record<string, PackKind> = { [WORKFLOW_CHAIN_PACK_KIND]: 'workflow-chain', [NODE_PACK_KIND]: 'node' };

/**
 * Direct pack installs: a workflow-chain pack or a node pack installed into the caller's scope (its
 * workspace, else the tenant) through the same registry and installers as an applied proposal or an
 * import, after the same install checks, all in one transaction: a refused pack installs nothing.
 */
@Injectable()
export class InstalledPacksService {
  constructor(
    private readonly ds: DataSource,
    private readonly registry: ArtifactRegistryService,
    private readonly checks: InstallChecks,
  ) {}

  /** The registry kind of a pack manifest, by its `kind` discriminator (a node pack has none or `node`). */
  private registryKindOf(manifest: Record<string, unknown>): string {
    if (manifest.kind === 'workflow-chain') return WORKFLOW_CHAIN_PACK_KIND;
    if (manifest.kind === 'connection') {
      throw new UnprocessableError(PACK_INVALID, 'A connection pack is installed with POST /v1/connection-packs (it needs connections:manage and is tenant-wide).', {
        problems: [{ path: '/kind', code: 'unsupported_pack_kind', message: 'connection packs are installed with POST /v1/connection-packs' }],
      });
    }
    if (manifest.kind === undefined || manifest.kind === 'node') return NODE_PACK_KIND;
    throw new UnprocessableError(PACK_INVALID, `This route installs workflow-chain packs and node packs, not "${String(manifest.kind)}".`, {
      problems: [{ path: '/kind', code: 'unsupported_pack_kind', message: 'expected "workflow-chain", or a node pack (no kind)' }],
    });
  }

  /**
   * Every problem of `manifest`: its manifest schema (`invalid_manifest`) and what the install checks
   * find (node types, tools missing from the catalog, DAG, templates).
   */
  async problems(p: Principal, manifest: Record<string, unknown>): Promise<{ kind: string; problems: InstallProblem[] }> {
    const kind = this.registryKindOf(manifest);
    const violations = await this.registry.validate(kind, manifest);
    const problems: InstallProblem[] = violations.map((v) => ({ path: v.path, code: 'invalid_manifest', message: v.message }));
    problems.push(...(await this.checks.problems(kind, manifest, p)));
    return { kind, problems };
  }

  async install(p: Principal, manifest: Record<string, unknown>, text?: string): Promise<{ outcome: InstallOutcome; pack: InstalledPackView }> {
    const { kind, problems } = await this.problems(p, manifest);
    if (problems.length) {
      const first = problems[0];
      const more = problems.length > 1 ? ` (and ${problems.length - 1} more)` : '';
      throw new UnprocessableError(PACK_INVALID, `The pack cannot be installed: ${first.path || '/'}: ${first.message}${more}. Nothing was installed.`, { problems });
    }
    const { artifact, outcome } = await this.ds.transaction((m) =>
      this.registry.install(kind, manifest, { tenant: p.tenant, workspace: p.workspace, principal: p.principal }, DIRECT_ORIGIN, m, text),
    );
    return { outcome, pack: toView(artifact) };
  }

  /** The packs the caller's scope sees: the tenant's and, for a workspace credential, its workspace's. */
  async list(scope: TenantScope, kind?: PackKind): Promise<InstalledPackView[]> {
    const kinds = kind ? [REGISTRY_KIND[kind]] : Object.values(REGISTRY_KIND);
    return (await this.registry.list(scope, kinds)).map(toView);
  }

  async get(scope: TenantScope, id: string): Promise<InstalledPackView> {
    return toView(await this.find(scope, id));
  }

  /**
   * Removes a pack by id. Runs already started keep the chain they were created with; new runs of its
   * chains are 404. A workspace credential removes its workspace's packs only (a tenant-wide one: 403).
   */
  async uninstall(p: Principal, id: string): Promise<InstalledPackView> {
    const found = await this.find(p, id);
    if ((found.workspace ?? undefined) !== (p.workspace ?? undefined)) {
      throw new ForbiddenError('This pack belongs to the whole tenant: a tenant-level credential uninstalls it.', { id });
    }
    const removed = await this.registry.uninstall({ tenant: p.tenant, workspace: p.workspace, principal: p.principal }, found.kind, found.name);
    return toView(removed);
  }

  private async find(scope: TenantScope, id: string): Promise<InstalledArtifact> {
    // A malformed id names nothing, exactly like an unknown or another tenant's one.
    const found = UUID.test(id) ? (await this.registry.list(scope, Object.values(REGISTRY_KIND))).find((a) => a.id === id) : undefined;
    if (!found) throw new NotFoundError('No such installed pack.');
    return found;
  }
}

function toView(a: InstalledArtifact): InstalledPackView {
  const kind = PACK_KIND_OF[a.kind];
  const view: InstalledPackView = {
    id: a.id,
    kind,
    name: a.name,
    ...(a.version ? { version: a.version } : {}),
    ref: a.ref,
    ...(a.workspace ? { workspace: a.workspace } : {}),
    origin: a.origin,
    installedBy: a.installedBy,
    installedAt: a.createdAt,
    updatedAt: a.updatedAt,
  };
  const c = a.content;
  if (kind === 'workflow-chain' && Array.isArray(c.chains)) {
    view.chains = (c.chains as Array<Record<string, unknown>>).map((ch) => ({
      chainId: String(ch.chainId),
      ...(typeof ch.version === 'string' ? { version: ch.version } : {}),
      ...(typeof ch.label === 'string' ? { label: ch.label } : {}),
    }));
  }
  if (kind === 'node' && Array.isArray(c.nodes)) view.nodeTypes = (c.nodes as Array<Record<string, unknown>>).map((n) => String(n.typeId));
  return view;
}
