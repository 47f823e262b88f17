import { Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import {
  BuiltinConnectionProvider,
  ConnectionProviderSource,
  ConnectionProviderSourceContract,
  } from '@openwop-host/plugin-sdk';
import { collectExtensions, ExtensionMeta } from '../../../platform/plugins/extension-registry';
import { HealthService } from '../../../platform/health/health.service';
import { HostBuiltinConnectionProviders } from './builtin-providers';
import { validateConnectionPackManifest } from './connection-pack-validator';
import { isSemver } from './provider-resolution';

export interface RegisteredBuiltin extends BuiltinConnectionProvider {
  /** The contribution it came from (`openwop-host.builtin`, a plugin's id...). */
  contributedBy: string;
}

/** The manifest a built-in provider is checked as (like an installed pack). */
export function builtinManifest(entry: BuiltinConnectionProvider): Record<string, unknown> {
  return { name: 'core.openwop-host.builtin', version: entry.version ?? '0.0.0', kind: 'connection', engines: { openwop: '>=1.0.0' }, provider: entry.provider };
}

/**
 * The built-in providers: collected at start from every `@ConnectionProviderSource` contribution,
 * each checked like an installed pack (credential-material scan, manifest schema, semantics). A
 * contribution that throws or ships an invalid provider loses only that provider; health says why.
 * The host's own providers (HostBuiltinConnectionProviders) are held to the same checks by
 * builtin-provider-registry.spec.ts instead of at every start, where they were the only reason a
 * boot read the schema files and compiled the manifest schema (30 to 80 ms of it, by the load).
 */
@Injectable()
export class BuiltinProviderRegistry implements OnApplicationBootstrap {
  private readonly byId = new Map<string, RegisteredBuiltin>();
  private readonly logger = new Logger('connections');

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly health: HealthService,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    const problems: string[] = [];
    const sources = collectExtensions<ExtensionMeta<typeof ConnectionProviderSource>, ConnectionProviderSourceContract>(this.discovery, { name: 'connection provider source', metadataKey: ConnectionProviderSource.key, key: (meta) => meta.id });
    for (const { meta, provider: source } of sources) {
      let contributed: BuiltinConnectionProvider[];
      try {
        contributed = await source.providers();
      } catch (e) {
        problems.push(`${meta.id}: ${(e as Error).message}`);
        continue;
      }
      // Exactly the host's own class: a subclass (a contribution of its own) is checked like any other.
      const shipped = (source as object)?.constructor === HostBuiltinConnectionProviders;
      for (const entry of contributed) problems.push(...this.add(meta.id, entry, { shipped }));
    }
    if (problems.length) {
      for (const p of problems) this.logger.warn({ msg: 'built-in connection provider left out', problem: p });
      this.health.report('connections.builtin-providers', false, `${problems.length} built-in provider(s) left out`, { problems });
    }
  }

  /** Registers one built-in; returns why it was refused (empty when accepted). `shipped`: the host's own, checked by its spec. */
  add(contributedBy: string, entry: BuiltinConnectionProvider, opts: { shipped?: boolean } = {}): string[] {
    const id = entry?.provider?.id;
    const label = `${contributedBy}/${typeof id === 'string' ? id : '?'}`;
    if (entry.version !== undefined && !isSemver(entry.version)) return [`${label}: version is not SemVer`];
    const errors = opts.shipped ? [] : validateConnectionPackManifest(builtinManifest(entry));
    if (errors.length) return [`${label}: ${errors.map((e) => `${e.code} at ${e.path ?? '/'}`).join(', ')}`];
    if (this.byId.has(id)) return [`${label}: provider id already contributed by ${this.byId.get(id)!.contributedBy}`];
    this.byId.set(id, { ...entry, contributedBy });
    return [];
  }

  get(providerId: string): RegisteredBuiltin | undefined {
    return this.byId.get(providerId);
  }

  list(): RegisteredBuiltin[] {
    return [...this.byId.values()].sort((a, b) => a.provider.id.localeCompare(b.provider.id));
  }
}
