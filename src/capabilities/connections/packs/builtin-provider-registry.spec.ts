import type { DiscoveryService } from '@nestjs/core';
import { ConnectionProviderSource, type BuiltinConnectionProvider } from '@openwop-host/plugin-sdk';
import { HealthService } from '../../../platform/health/health.service';
import { builtinManifest, BuiltinProviderRegistry } from './builtin-provider-registry.service';
import { validateConnectionPackManifest } from './connection-pack-validator';
import { HOST_BUILTIN_PROVIDERS, HostBuiltinConnectionProviders } from './builtin-providers';

const base = (): BuiltinConnectionProvider => JSON.parse(JSON.stringify(HOST_BUILTIN_PROVIDERS[0]));

@ConnectionProviderSource({ id: 'acme.plugin' })
class PluginProviders {
  providers(): BuiltinConnectionProvider[] {
    const ok = base();
    ok.provider.id = 'acme-crm';
    const leaky = base();
    leaky.provider.id = 'acme-leaky';
    (leaky.provider.auth as Record<string, unknown>).clientSecret = 'x';
    return [ok, leaky];
  }
}

@ConnectionProviderSource({ id: 'acme.broken' })
class BrokenProviders {
  providers(): BuiltinConnectionProvider[] {
    throw new Error('boom');
  }
}

function discoveryOf(...instances: object[]): DiscoveryService {
  return { getProviders: () => instances.map((instance) => ({ instance, metatype: instance.constructor })) } as unknown as DiscoveryService;
}

describe('built-in provider registry', () => {
  it('collects valid contributions and leaves out invalid or failing ones, reporting them in health', async () => {
    const health = new HealthService();
    const reg = new BuiltinProviderRegistry(discoveryOf(new HostBuiltinConnectionProviders(), new PluginProviders(), new BrokenProviders()), health);
    await reg.onApplicationBootstrap();
    expect(reg.list().map((b) => b.provider.id)).toEqual(['acme-crm', 'github', 'slack']);
    expect(reg.get('acme-crm')?.contributedBy).toBe('acme.plugin');
    expect(reg.get('acme-leaky')).toBeUndefined();
    const h = health.snapshot()['connections.builtin-providers'];
    expect(h.ok).toBe(false);
    expect(JSON.stringify(h.data)).toContain('connection_pack_credential_material');
    expect(JSON.stringify(h.data)).toContain('acme.broken: boom');
  });

  it('ships only providers that pass the checks of an installed pack (not re-run at every start)', () => {
    expect(HOST_BUILTIN_PROVIDERS.length).toBeGreaterThan(0);
    for (const entry of HOST_BUILTIN_PROVIDERS) expect({ id: entry.provider.id, errors: validateConnectionPackManifest(builtinManifest(entry)) }).toEqual({ id: entry.provider.id, errors: [] });
    // A copy of one, contributed by anything but the host's own source, is still checked at start.
    const leaky = base();
    (leaky.provider.auth as Record<string, unknown>).clientSecret = 'x';
    expect(new BuiltinProviderRegistry(discoveryOf(), new HealthService()).add('acme.plugin', leaky)[0]).toContain('connection_pack_credential_material');
  });

  it('refuses a duplicate id and a non-SemVer version', () => {
    const reg = new BuiltinProviderRegistry(discoveryOf(), new HealthService());
    expect(reg.add('a', base())).toEqual([]);
    expect(reg.add('b', base())[0]).toContain('already contributed by a');
    const bad = base();
    bad.provider.id = 'other';
    bad.version = 'v1';
    expect(reg.add('c', bad)[0]).toContain('not SemVer');
  });
});
