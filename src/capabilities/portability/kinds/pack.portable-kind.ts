import { Injectable } from '@nestjs/common';
import { PortableKind } from '@openwop-host/plugin-sdk';
import { ArtifactBackedPortableKind } from './artifact-backed-portable-kind';

/**
 * `pack` items: node packs and workflow-chain packs (RFC 0003/0013). The manifest's own `kind`
 * discriminator (`workflow-chain`, else a node pack) picks the registry kind.
 */
@PortableKind({ kind: 'pack' })
@Injectable()
export class PackPortableKind extends ArtifactBackedPortableKind {
  protected readonly bundleKind = 'pack' as const;
  protected readonly registryKinds = ['node-pack', 'workflow-chain-pack'] as const;

  protected registryKindOf(payload: Record<string, unknown>): string {
    return payload.kind === 'workflow-chain' ? 'workflow-chain-pack' : 'node-pack';
  }
}
