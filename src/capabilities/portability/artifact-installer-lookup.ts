import { Injectable, OnApplicationBootstrap } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import { ArtifactInstaller, ArtifactInstallerProvider, extensionMetadata } from '@openwop-host/plugin-sdk';

/**
 * The artifact installers' `identify()`, which the pack registry uses but does not expose: an import
 * plan needs an artifact's registry name to find what it would replace, without installing it.
 */
@Injectable()
export class ArtifactInstallerLookup implements OnApplicationBootstrap {
  private readonly installers = new Map<string, ArtifactInstallerProvider>();

  constructor(private readonly discovery: DiscoveryService) {}

  onApplicationBootstrap(): void {
    for (const wrapper of this.discovery.getProviders()) {
      const meta = extensionMetadata(ArtifactInstaller, wrapper.metatype ?? undefined);
      if (meta && wrapper.instance && !this.installers.has(meta.kind)) this.installers.set(meta.kind, wrapper.instance as ArtifactInstallerProvider);
    }
  }

  /** The registry name of `content` for `kind`, or undefined when the kind has no installer. */
  identify(kind: string, content: Record<string, unknown>): { name: string; version?: string } | undefined {
    return this.installers.get(kind)?.identify(content);
  }
}
