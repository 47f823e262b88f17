import { Injectable } from '@nestjs/common';
import type { ConnectionPackManifest } from '@openwop-host/plugin-sdk';
import { DataSource } from 'typeorm';
import { ArtifactRegistryService } from '../../../platform/artifacts/artifact-registry.service';
import { DomainError } from '../../../platform/errors/domain-error';
import type { TenantScope } from '../../../platform/identity/principal';
import { BuiltinProviderRegistry } from './builtin-provider-registry.service';
import { CONNECTION_PACK_KIND } from './connection-pack.installer';
import { ConnectionProviderClaimEntity } from './connection-provider-claim.entity';

/**
 * The connection-provider registry read (RFC 0233, `schemas/v2/connection-provider-registry`):
 * every provider definition a caller's connections resolve against, built-ins and installed packs,
 * each bare id once, and the pack registrations refused under connection-packs.md §Provider
 * identity. Content-free: ids, pack names and codes only (no endpoint, scope catalog or
 * credential). Packs are tenant artifacts on this host, so the registry a caller reads is its
 * tenant's (the built-ins plus the packs its tenant installed); it names no tenant.
 */

export interface RegistryProvider {
  id: string;
  source: 'builtin' | 'pack';
  packName?: string;
}

export interface RegistryRefusal {
  packName: string;
  providerId: string;
  code: 'connection_provider_conflict' | 'connection_provider_unresolved';
  heldBy?: string;
}

/** At most this many refusals are kept per tenant (the newest). */
const MAX_REFUSALS = 100;

/**
 * Refused pack registrations as attempted by this process (RFC 0233 §B allows recomputing them at
 * every start): recorded by the install path, read by the registry.
 */
@Injectable()
export class ProviderRefusals {
  private readonly byTenant = new Map<string, RegistryRefusal[]>();

  record(tenant: string, refusal: RegistryRefusal): void {
    const list = (this.byTenant.get(tenant) ?? []).filter((r) => r.packName !== refusal.packName || r.providerId !== refusal.providerId || r.code !== refusal.code);
    list.push(refusal);
    this.byTenant.set(tenant, list.slice(-MAX_REFUSALS));
  }

  /** A registration that later succeeded is no longer refused. */
  clear(tenant: string, packName: string): void {
    const list = this.byTenant.get(tenant);
    if (list) this.byTenant.set(tenant, list.filter((r) => r.packName !== packName));
  }

  of(tenant: string): RegistryRefusal[] {
    return [...(this.byTenant.get(tenant) ?? [])];
  }
}

const PROVIDER_ID = /^[a-z][a-z0-9-]*$/;

@Injectable()
export class ProviderRegistryService {
  constructor(
    private readonly ds: DataSource,
    private readonly artifacts: ArtifactRegistryService,
    private readonly builtins: BuiltinProviderRegistry,
    private readonly refusals: ProviderRefusals,
  ) {}

  /** `listConnectionProviders`: each bare id once (an installed pack's claim, else the built-in), sorted by id. */
  async list(scope: TenantScope): Promise<{ providers: RegistryProvider[]; refusals: RegistryRefusal[] }> {
    const claims = await this.ds.getRepository(ConnectionProviderClaimEntity).find({ where: { tenant: scope.tenant } });
    const byId = new Map<string, RegistryProvider>();
    for (const b of this.builtins.list()) byId.set(b.provider.id, { id: b.provider.id, source: 'builtin' });
    for (const c of claims) byId.set(c.providerId, { id: c.providerId, source: 'pack', packName: c.packName });
    const providers = [...byId.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    return { providers, refusals: this.refusals.of(scope.tenant) };
  }

  /**
   * `resolveConnectionProvider`: the definition a bare id resolves to, or with `pack` only that
   * pack's (connection-packs.md §The qualified form). `404 connection_provider_unresolved` otherwise.
   */
  async resolve(scope: TenantScope, providerId: string, pack?: string): Promise<RegistryProvider> {
    const unresolved = () =>
      new DomainError('connection_provider_unresolved', 404, pack === undefined ? `No definition of provider "${providerId}".` : `The pack "${pack}" does not define provider "${providerId}".`, {
        providerId,
        ...(pack === undefined ? {} : { packName: pack }),
      });
    if (!PROVIDER_ID.test(providerId) || providerId.length > 128) throw unresolved();
    if (pack !== undefined) {
      const installed = await this.artifacts.get({ tenant: scope.tenant }, CONNECTION_PACK_KIND, pack);
      if (!installed || (installed.content as unknown as ConnectionPackManifest).provider?.id !== providerId) throw unresolved();
      return { id: providerId, source: 'pack', packName: installed.name };
    }
    const claim = await this.ds.getRepository(ConnectionProviderClaimEntity).findOne({ where: { tenant: scope.tenant, providerId } });
    if (claim) return { id: providerId, source: 'pack', packName: claim.packName };
    if (this.builtins.get(providerId)) return { id: providerId, source: 'builtin' };
    throw unresolved();
  }
}
