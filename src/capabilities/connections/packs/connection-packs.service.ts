import { Inject, Injectable } from '@nestjs/common';
import type { ConnectionPackManifest, ConnectionProviderDefinition, InstalledArtifact } from '@openwop-host/plugin-sdk';
import { DataSource } from 'typeorm';
import { ArtifactRegistryService } from '../../../platform/artifacts/artifact-registry.service';
import { ConflictError, DomainError, NotFoundError, UnprocessableError } from '../../../platform/errors/domain-error';
import { EventLogService, HOST_STREAM } from '../../../platform/events/event-log.service';
import { requireTenantLevel } from '../../../platform/identity/principal';
import type { Principal, TenantScope } from '../../../platform/identity/principal';
import { HOST_CONFIG, HostConfig } from '../../../platform/config/host-config';
import { ConnectionChangeNotifier } from '../connection-change-notifier';
import { connectionsSettings } from '../connections.settings';
import { BuiltinProviderRegistry } from './builtin-provider-registry.service';
import { buildConsentPlan, ConsentAccess, ConsentPlan } from './consent-plan';
import { CONNECTION_PACK_KIND } from './connection-pack.installer';
import { ManifestError, validateConnectionPackManifest } from './connection-pack-validator';
import { ConnectionProviderClaimEntity } from './connection-provider-claim.entity';
import { checkEgress, EgressDecision } from './egress-check';
import { decideResolution, ProviderSource } from './provider-resolution';
import { ProviderRefusals } from './provider-registry';

export interface ConnectionPackView {
  name: string;
  version: string;
  providerId: string;
  displayName: string;
  category: string;
  /** `sha256:<hex>` of the installed bytes (the manifest's JSON text as submitted). */
  ref: string;
  installedBy: string;
  installedAt: string;
  updatedAt: string;
  manifest: ConnectionPackManifest;
}

export type InstallOutcome = 'created' | 'updated' | 'unchanged';

export type ProviderResolution =
  | { resolved: true; providerId: string; source: ProviderSource; version?: string; packName?: string; provider?: ConnectionProviderDefinition }
  | { resolved: false; providerId: string; code: 'connection_provider_unresolved' | 'connection_provider_conflict'; heldBy?: string };

export type ResolvedProvider = Extract<ProviderResolution, { resolved: true }> & { provider: ConnectionProviderDefinition };

/** A manifest refused at install: 422 with every error (code + JSON Pointer, never a value). */
export class ManifestRejectedError extends UnprocessableError {
  constructor(readonly errors: ManifestError[]) {
    super(errors[0].code, `The connection pack was refused: ${errors[0].message}`, { errors: errors.map(({ code, path }) => ({ code, path })) });
  }
}

const PROVIDER_ID = /^[a-z][a-z0-9-]*$/;

/**
 * Connection packs (RFC 0095): install/list/get/uninstall in the tenant's pack registry, provider
 * resolution against installed packs and built-ins, consent plans and the egress check. Packs are
 * tenant-wide: a workspace-bound caller manages its tenant's packs.
 */
@Injectable()
export class ConnectionPacksService {
  constructor(
    private readonly ds: DataSource,
    private readonly registry: ArtifactRegistryService,
    private readonly builtins: BuiltinProviderRegistry,
    private readonly events: EventLogService,
    private readonly notifier: ConnectionChangeNotifier,
    @Inject(HOST_CONFIG) private readonly config: HostConfig,
    private readonly refusals: ProviderRefusals,
  ) {}

  /**
   * Installs a manifest: credential-material scan → schema → semantics (nothing written on any
   * failure), then the registry install and the provider claim in one transaction. Re-installing
   * identical bytes is `unchanged`. A refused provider claim is recorded for the registry read
   * (provider-registry.ts). `major` 2 applies v2's provider identity (connection-packs.md §Provider
   * identity): a pack claiming a built-in's id is refused too, where v1 lets the newer version win.
   */
  async install(p: Principal, manifest: unknown, origin = 'api', text?: string, major = 1): Promise<{ outcome: InstallOutcome; pack: ConnectionPackView }> {
    try {
      const result = await this.installOnce(p, manifest, origin, text, major);
      this.refusals.clear(p.tenant, result.pack.name);
      return result;
    } catch (e) {
      if (e instanceof DomainError && e.code === 'connection_provider_conflict') {
        const m = manifest as { name?: unknown; provider?: { id?: unknown } };
        this.refusals.record(p.tenant, {
          packName: String(m.name),
          providerId: String(m.provider?.id),
          code: 'connection_provider_conflict',
          heldBy: typeof e.details?.heldBy === 'string' ? e.details.heldBy : 'builtin',
        });
      }
      throw e;
    }
  }

  private async installOnce(p: Principal, manifest: unknown, origin: string, text: string | undefined, major: number): Promise<{ outcome: InstallOutcome; pack: ConnectionPackView }> {
    requireTenantLevel(p, 'Connection packs');
    const errors = validateConnectionPackManifest(manifest, { maxBytes: connectionsSettings(this.config).maxManifestBytes });
    if (errors.length) throw new ManifestRejectedError(errors);
    const providerId = (manifest as ConnectionPackManifest).provider.id;
    // A pack that already holds the id (installed earlier) re-publishes: the claim is its own.
    if (major >= 2 && this.builtins.get(providerId) && !(await this.holds(p.tenant, providerId, (manifest as ConnectionPackManifest).name))) {
      throw new ConflictError('connection_provider_conflict', `Provider "${providerId}" is already defined by the host's built-in provider.`, { providerId, heldBy: 'builtin' });
    }
    const result = await this.ds.transaction(async (m) => {
      // `text`: the manifest as submitted, stored (and hashed into `ref`) byte for byte.
      const r = await this.registry.install(CONNECTION_PACK_KIND, manifest as Record<string, unknown>, { tenant: p.tenant, principal: p.principal }, origin, m, text);
      if (r.outcome !== 'unchanged') {
        const view = toView(r.artifact);
        await this.events.append({ tenant: p.tenant }, HOST_STREAM, 'connection_pack.installed', { name: view.name, version: view.version, providerId: view.providerId, ref: view.ref, outcome: r.outcome }, { manager: m });
      }
      return r;
    });
    if (result.outcome !== 'unchanged') this.notifier.changed(p.tenant);
    return { outcome: result.outcome, pack: toView(result.artifact) };
  }

  private async holds(tenant: string, providerId: string, packName: string): Promise<boolean> {
    const claim = await this.ds.getRepository(ConnectionProviderClaimEntity).findOne({ where: { tenant, providerId } });
    return claim?.packName === packName;
  }

  /** The seam's view of an install: refusals are data (`{installed:false, errors}`), not HTTP errors. */
  async installForSeam(p: Principal, manifest: unknown, text?: string, major = 1): Promise<{ installed: boolean; errors?: Array<{ code: string; path?: string; message: string }> }> {
    try {
      await this.install(p, manifest, 'seam', text, major);
      return { installed: true };
    } catch (e) {
      if (e instanceof ManifestRejectedError) return { installed: false, errors: e.errors.map(({ code, path, message }) => ({ code, path, message })) };
      if (e instanceof DomainError && e.status < 500) return { installed: false, errors: [{ code: e.code, message: e.message }] };
      throw e;
    }
  }

  async list(scope: TenantScope): Promise<ConnectionPackView[]> {
    return (await this.registry.list({ tenant: scope.tenant }, [CONNECTION_PACK_KIND])).map(toView);
  }

  async get(scope: TenantScope, name: string): Promise<ConnectionPackView> {
    const a = await this.registry.get({ tenant: scope.tenant }, CONNECTION_PACK_KIND, name);
    if (!a) throw new NotFoundError('No such connection pack.');
    return toView(a);
  }

  async uninstall(p: Principal, name: string): Promise<ConnectionPackView> {
    requireTenantLevel(p, 'Connection packs');
    const removed = await this.ds.transaction(async (m) => {
      const a = await this.registry.uninstall({ tenant: p.tenant, principal: p.principal }, CONNECTION_PACK_KIND, name, m);
      const view = toView(a);
      await this.events.append({ tenant: p.tenant }, HOST_STREAM, 'connection_pack.uninstalled', { name: view.name, version: view.version, providerId: view.providerId }, { manager: m });
      return view;
    });
    this.notifier.changed(p.tenant);
    return removed;
  }

  /**
   * RFC 0095 clause 6. `provider` is a bare id (the installed pack claiming it, else a built-in) or
   * `<packName>#<id>` (only that pack). `simulateBuiltinVersion` (conformance seam only) stands in
   * for a built-in of that version.
   */
  async resolve(scope: TenantScope, provider: string, simulateBuiltinVersion?: string): Promise<ProviderResolution> {
    const hash = provider.indexOf('#');
    const providerId = hash >= 0 ? provider.slice(hash + 1) : provider;
    const unresolved = { resolved: false as const, providerId, code: 'connection_provider_unresolved' as const };
    if (!PROVIDER_ID.test(providerId)) return unresolved;
    let pack: InstalledArtifact | undefined;
    if (hash >= 0) {
      pack = await this.registry.get({ tenant: scope.tenant }, CONNECTION_PACK_KIND, provider.slice(0, hash));
      if (pack && (pack.content as unknown as ConnectionPackManifest).provider.id !== providerId) pack = undefined;
      if (!pack) return unresolved;
    } else {
      const claim = await this.ds.getRepository(ConnectionProviderClaimEntity).findOne({ where: { tenant: scope.tenant, providerId } });
      if (claim) pack = await this.registry.get({ tenant: scope.tenant, workspace: claim.workspaceKey || undefined }, CONNECTION_PACK_KIND, claim.packName);
    }
    const builtin = simulateBuiltinVersion !== undefined ? { version: simulateBuiltinVersion } : this.builtins.get(providerId);
    const decision = decideResolution(pack ? { version: pack.version } : undefined, builtin);
    if (!decision.resolved) return { resolved: false, providerId, code: decision.code, heldBy: pack?.name };
    if (decision.source === 'pack') {
      return { resolved: true, providerId, source: 'pack', version: decision.version, packName: pack!.name, provider: (pack!.content as unknown as ConnectionPackManifest).provider };
    }
    return { resolved: true, providerId, source: 'builtin', version: decision.version, provider: this.builtins.get(providerId)?.provider };
  }

  /** A provider that must resolve: 404 `connection_provider_unresolved` / 409 `connection_provider_conflict`. */
  async requireProvider(scope: TenantScope, provider: string): Promise<ResolvedProvider> {
    const r = await this.resolve(scope, provider);
    if (r.resolved && r.provider) return r as ResolvedProvider;
    if (!r.resolved && r.code === 'connection_provider_conflict') {
      throw new ConflictError('connection_provider_conflict', `The installed pack for provider "${r.providerId}" is older than the host's built-in provider.`, { providerId: r.providerId, heldBy: r.heldBy });
    }
    throw new DomainError('connection_provider_unresolved', 404, `No installed pack or built-in defines provider "${r.providerId}".`, { providerId: r.providerId });
  }

  /** Every provider id the tenant can use (built-ins and installed packs) with how it resolves. */
  async listProviders(scope: TenantScope): Promise<ProviderResolution[]> {
    const claims = await this.ds.getRepository(ConnectionProviderClaimEntity).find({ where: { tenant: scope.tenant } });
    const ids = new Set([...this.builtins.list().map((b) => b.provider.id), ...claims.map((c) => c.providerId)]);
    const out: ProviderResolution[] = [];
    for (const id of [...ids].sort()) out.push(await this.resolve(scope, id));
    return out;
  }

  async consentPlan(scope: TenantScope, provider: string, requested: readonly ConsentAccess[]): Promise<ConsentPlan & { providerId: string }> {
    const r = await this.requireProvider(scope, provider);
    return { providerId: r.providerId, ...buildConsentPlan(r.provider, requested) };
  }

  /** May a credential of `provider` be sent to `requestHost`? A pure decision; fails closed. */
  async egressCheck(scope: TenantScope, provider: string, requestHost: string): Promise<EgressDecision | { allowed: false; code: 'connection_provider_unresolved' | 'connection_provider_conflict' }> {
    const r = await this.resolve(scope, provider);
    if (!r.resolved) return { allowed: false, code: r.code };
    if (!r.provider) return { allowed: false, code: 'no_api_hosts' };
    return checkEgress(r.provider.apiHosts, requestHost);
  }
}

function toView(a: InstalledArtifact): ConnectionPackView {
  const manifest = a.content as unknown as ConnectionPackManifest;
  return {
    name: a.name,
    version: manifest.version,
    providerId: manifest.provider.id,
    displayName: manifest.provider.displayName,
    category: manifest.provider.category,
    ref: a.ref,
    installedBy: a.installedBy,
    installedAt: a.createdAt,
    updatedAt: a.updatedAt,
    manifest,
  };
}
