import { Inject, Injectable } from '@nestjs/common';
import { ArtifactInstaller, ArtifactInstallerProvider, ArtifactViolation, ConnectionPackManifest, InstalledArtifact, InstallScope } from '@openwop-host/plugin-sdk';
import type { EntityManager } from 'typeorm';
import { HOST_CONFIG, HostConfig } from '../../../platform/config/host-config';
import { ConflictError } from '../../../platform/errors/domain-error';
import { ConnectionChangeNotifier } from '../connection-change-notifier';
import { ConnectionEntity } from '../connections/connection.entity';
import { connectionsSettings } from '../connections.settings';
import { validateConnectionPackManifest } from './connection-pack-validator';
import { BuiltinProviderRegistry } from './builtin-provider-registry.service';
import { ConnectionProviderClaimEntity } from './connection-provider-claim.entity';

export const CONNECTION_PACK_KIND = 'connection-pack';

/**
 * Installs connection packs into the host's pack registry, whoever installs them (the REST route,
 * the conformance seam, a bundle import): the same checks run on every path, and the provider-id
 * claim is written in the install transaction so a refused claim rolls the whole install back.
 */
@Injectable()
@ArtifactInstaller({ kind: CONNECTION_PACK_KIND })
export class ConnectionPackInstaller implements ArtifactInstallerProvider {
  constructor(
    @Inject(HOST_CONFIG) private readonly config: HostConfig,
    private readonly builtins: BuiltinProviderRegistry,
    private readonly notifier: ConnectionChangeNotifier,
  ) {}

  validate(content: Record<string, unknown>): ArtifactViolation[] {
    return validateConnectionPackManifest(content, { maxBytes: connectionsSettings(this.config).maxManifestBytes }).map((e) => ({
      path: e.path ?? '',
      message: `${e.code}: ${e.message}`,
    }));
  }

  identify(content: Record<string, unknown>): { name: string; version?: string } {
    return { name: String(content.name), version: String(content.version) };
  }

  /** A provider id another installed pack of the tenant holds would refuse the install (the claim in `afterInstall`). */
  async preflight(content: Record<string, unknown>, scope: InstallScope, tx?: unknown): Promise<ArtifactViolation[]> {
    const providerId = (content as unknown as ConnectionPackManifest).provider?.id;
    if (typeof providerId !== 'string' || !tx) return [];
    const holder = await (tx as EntityManager).getRepository(ConnectionProviderClaimEntity).findOne({ where: { tenant: scope.tenant, providerId } });
    if (!holder || holder.packName === content.name) return [];
    return [{ path: '/provider/id', message: `connection_provider_conflict: provider "${providerId}" is already defined by the installed pack "${holder.packName}"` }];
  }

  async afterInstall(artifact: InstalledArtifact, scope: InstallScope, tx: unknown): Promise<void> {
    const m = tx as EntityManager;
    const providerId = (artifact.content as unknown as ConnectionPackManifest).provider.id;
    // A new version of the same pack may define another provider id: it gives up its old claim.
    await m.query(`DELETE FROM "connection_provider_claim" WHERE "tenant" = $1 AND "pack_name" = $2 AND "provider_id" <> $3`, [scope.tenant, artifact.name, providerId]);
    const claimed = (await m.query(
      `INSERT INTO "connection_provider_claim" ("tenant", "provider_id", "pack_name", "workspace_key") VALUES ($1, $2, $3, $4)
       ON CONFLICT ("tenant", "provider_id") DO UPDATE SET "workspace_key" = EXCLUDED."workspace_key"
       WHERE "connection_provider_claim"."pack_name" = EXCLUDED."pack_name" RETURNING "pack_name"`,
      [scope.tenant, providerId, artifact.name, artifact.workspace ?? ''],
    )) as Array<{ pack_name: string }>;
    if (!claimed.length) {
      const holder = await m.getRepository(ConnectionProviderClaimEntity).findOne({ where: { tenant: scope.tenant, providerId } });
      throw new ConflictError('connection_provider_conflict', `Provider "${providerId}" is already defined by the installed pack "${holder?.packName ?? 'another pack'}".`, {
        providerId,
        heldBy: holder?.packName,
      });
    }
    // Whoever installed it (the route, a bundle import): the connector tools are listed anew.
    this.notifier.changed(scope.tenant);
  }

  async afterUninstall(artifact: InstalledArtifact, scope: InstallScope, tx: unknown): Promise<void> {
    const m = tx as EntityManager;
    const providerId = (artifact.content as unknown as ConnectionPackManifest).provider.id;
    // Connections must keep resolving: without a built-in fallback, a provider in use stays installed.
    if (!this.builtins.get(providerId)) {
      const inUse = await m.getRepository(ConnectionEntity).count({ where: { tenant: scope.tenant, providerId } });
      if (inUse > 0) {
        throw new ConflictError('connection_pack_in_use', `${inUse} connection(s) use provider "${providerId}"; delete them before uninstalling the pack.`, { providerId, connections: inUse });
      }
    }
    await m.getRepository(ConnectionProviderClaimEntity).delete({ tenant: scope.tenant, packName: artifact.name, providerId });
  }
}
