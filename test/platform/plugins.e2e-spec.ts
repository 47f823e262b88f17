import * as path from 'node:path';
import { createTestApp, TestApp } from '../support/test-app';

const fixture = (name: string) => path.join(__dirname, '../fixtures/plugins', name);

describe('plugin loader', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({
      env: {
        OPENWOP_PLUGINS: [
          fixture('good-plugin.ts'),
          fixture('wrong-host-range.ts'),
          fixture('global-guard.ts'),
          fixture('not-a-plugin.ts'),
          fixture('raw-database.ts'),
          fixture('host-config.ts'),
          '@openwop-host/no-such-plugin',
        ].join(','),
      },
      configFile: { plugins: { 'example.greeting': { greeting: 'hello from a plugin' } } },
    });
  });
  afterAll(() => t.close());

  it('mounts a good plugin with its validated options and its declared scopes', async () => {
    expect(t.host.plugins.loaded.map((p) => p.id)).toEqual(['example.greeting']);
    const key = await t.key({ scopes: ['runs:read'] });
    const res = await t.http('GET', '/v1/x-example/greeting', { token: key });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ greeting: 'hello from a plugin', plugin: 'example.greeting' });
    expect((await t.http('GET', '/v1/x-example/greeting')).status).toBe(401);
    const noScope = await t.key({ scopes: ['tools:read'] });
    expect((await t.http('GET', '/v1/x-example/greeting', { token: noScope })).status).toBe(403);
  });

  it('reports every plugin that failed, with the reason, and keeps the host up', async () => {
    const reasons = Object.fromEntries(t.host.plugins.failed.map((f) => [f.id ?? f.specifier, f.reason]));
    expect(reasons['example.future']).toMatch(/supports host API \^2\.0\.0/);
    expect(reasons['example.sneaky']).toMatch(/global/);
    // The curated context only: the raw database and the host's configuration are refused, also from a nested module.
    expect(reasons['example.raw-database']).toMatch(/ReadsEverything injects the database \(DataSource\), which plugins may not use/);
    expect(reasons['example.host-config']).toMatch(/ReadsConfig injects the host's configuration/);
    expect(reasons[fixture('not-a-plugin.ts')]).toMatch(/definePlugin/);
    expect(reasons['@openwop-host/no-such-plugin']).toMatch(/cannot find the package/);
    const ready = await t.http('GET', '/readyz');
    expect(ready.status).toBe(200);
    expect(ready.body.status).toBe('degraded');
    expect(ready.body.components['plugin:example.sneaky'].ok).toBe(false);
    expect(t.logs.some((l) => l.includes('plugin failed to load') && l.includes('example.future'))).toBe(true);
  });
});

describe('plugin loader, strict and misconfigured', () => {
  it('refuses to start with a failing plugin when OPENWOP_PLUGINS_STRICT=true', async () => {
    await expect(createTestApp({ env: { OPENWOP_PLUGINS: fixture('wrong-host-range.ts'), OPENWOP_PLUGINS_STRICT: 'true' } })).rejects.toThrow(/failed to load/);
  });

  it('refuses to start with a route that declares neither scopes nor public access (fail closed)', async () => {
    await expect(createTestApp({ env: { OPENWOP_PLUGINS: fixture('undeclared-route.ts') } })).rejects.toThrow(
      /routes without @Scopes\(\) or @Public\(\): OpenDoorController\.open/,
    );
  });

  it('refuses a plugin whose options do not match its schema', async () => {
    const t = await createTestApp({ env: { OPENWOP_PLUGINS: fixture('good-plugin.ts') }, configFile: { plugins: { 'example.greeting': { greeting: 42 } } } });
    try {
      expect(t.host.plugins.failed[0].reason).toMatch(/options are invalid: \/greeting/);
    } finally {
      await t.close();
    }
  });
});
