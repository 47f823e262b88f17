import { Injectable } from '@nestjs/common';
import { BundleItem, PortabilityScope, PortableItemRequirements, PortableKind } from '@openwop-host/plugin-sdk';
import { MANAGE_CONNECTIONS_SCOPE } from '../../../platform/identity/scopes';
import { ArtifactBackedPortableKind } from './artifact-backed-portable-kind';

/** Registry kind of connection packs (RFC 0095), installed by the connections capability's installer. */
const CONNECTION_PACK = 'connection-pack';

/**
 * `pack` items: node packs, workflow-chain packs (RFC 0003/0013) and connection packs (RFC 0095).
 * The manifest's own `kind` discriminator (`workflow-chain`, `connection`, else a node pack) picks
 * the registry kind. Connection packs go through the connection-pack installer like
 * `POST /v1/connection-packs` (credential-material scan, schema, provider claim) and are
 * tenant-wide, as installed there.
 */
@PortableKind({ kind: 'pack' })
@Injectable()
export class PackPortableKind extends ArtifactBackedPortableKind {
  protected readonly bundleKind = 'pack' as const;
  protected readonly registryKinds = ['node-pack', 'workflow-chain-pack', CONNECTION_PACK] as const;

  protected registryKindOf(payload: Record<string, unknown>): string {
    if (payload.kind === 'workflow-chain') return 'workflow-chain-pack';
    if (payload.kind === 'connection') return CONNECTION_PACK;
    return 'node-pack';
  }

  protected scopeFor(kind: string, scope: PortabilityScope): PortabilityScope {
    return kind === CONNECTION_PACK ? { tenant: scope.tenant, principal: scope.principal } : scope;
  }

  /** A connection pack is installed like `POST /v1/connection-packs`: `connections:manage`, tenant-wide. */
  async requiredScopes(scope: PortabilityScope, item: BundleItem): Promise<PortableItemRequirements> {
    if (this.registryKindOf(item.payload) === CONNECTION_PACK) return { scopes: [MANAGE_CONNECTIONS_SCOPE], tenantLevel: true };
    return super.requiredScopes(scope, item);
  }
}
