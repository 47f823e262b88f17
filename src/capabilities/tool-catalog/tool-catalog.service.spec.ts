import 'reflect-metadata';
import { Injectable, Logger } from '@nestjs/common';
import type { DiscoveryService } from '@nestjs/core';
import { ToolDescriptor, ToolListingContext, ToolSource, ToolSourceProvider } from '@openwop-host/plugin-sdk';
import { HealthService } from '../../platform/health/health.service';
import type { Principal } from '../../platform/identity/principal';
import { ToolCatalogSettings } from './tool-catalog.config';
import { CatalogClock, ToolCatalogService } from './tool-catalog.service';

const principal = (scopes: string[] = [], tenant = 't1'): Principal => ({ tenant, principal: 'p', scopes: new Set(scopes), kind: 'api-key' });

function tool(toolId: string, extra: Partial<ToolDescriptor> = {}): ToolDescriptor {
  return { toolId, source: 'host-extension', safetyTier: 'read', ...extra };
}

class ListSource implements ToolSourceProvider {
  calls = 0;
  constructor(public tools: (ctx: ToolListingContext) => Promise<ToolDescriptor[]>) {}
  async listTools(ctx: ToolListingContext): Promise<ToolDescriptor[]> {
    this.calls++;
    return this.tools(ctx);
  }
}

function makeSource(name: string, fn: (ctx: ToolListingContext) => Promise<ToolDescriptor[]>, meta: { cacheTtlMs?: number } = {}) {
  @Injectable()
  @ToolSource({ source: 'host-extension', name, ...meta })
  class S extends ListSource {}
  return { instance: new S(fn), metatype: S };
}

function build(sources: Array<{ instance: object; metatype: Function }>, settings: Partial<ToolCatalogSettings> = {}) {
  const discovery = { getProviders: () => sources } as unknown as DiscoveryService;
  const health = new HealthService();
  const clock = new CatalogClock();
  let now = 1_000_000;
  jest.spyOn(clock, 'now').mockImplementation(() => now);
  const svc = new ToolCatalogService(discovery, health, clock, {
    cacheTtlMs: 1000,
    sourceTimeoutMs: 50,
    mcpServers: [],
    hostExtensions: [],
    ...settings,
  });
  svc.onApplicationBootstrap();
  return { svc, health, advance: (ms: number) => (now += ms) };
}

Logger.overrideLogger(false);

describe('ToolCatalogService', () => {
  it('merges sources, sorts by code units and filters by auth.scopes', async () => {
    const a = makeSource('a', async () => [tool('x-host-a-b'), tool('x-host-a-Z', { auth: { scopes: ['s:1'] } })]);
    const b = makeSource('b', async () => [tool('x-host-a-a')]);
    const { svc } = build([a, b]);
    expect((await svc.list(principal())).map((d) => d.toolId)).toEqual(['x-host-a-a', 'x-host-a-b']);
    expect((await svc.list(principal(['s:1']))).map((d) => d.toolId)).toEqual(['x-host-a-Z', 'x-host-a-a', 'x-host-a-b']);
    await expect(svc.get(principal(), 'x-host-a-Z')).rejects.toMatchObject({ status: 404, code: 'not_found' });
    await expect(svc.get(principal(), 'nope')).rejects.toMatchObject({ status: 404, code: 'not_found' });
  });

  it('serves neither tool of a toolId collision and names both sources in health', async () => {
    const a = makeSource('alpha', async () => [tool('x-host-a-same'), tool('x-host-a-only-alpha')]);
    const b = makeSource('beta', async () => [tool('x-host-a-same')]);
    const { svc, health } = build([a, b]);
    expect((await svc.list(principal())).map((d) => d.toolId)).toEqual(['x-host-a-only-alpha']);
    const h = health.snapshot()['tool-catalog'];
    expect(h.ok).toBe(false);
    expect(h.detail).toContain('alpha');
    expect(h.detail).toContain('beta');
    expect(h.data).toEqual({ collisions: [{ toolId: 'x-host-a-same', sources: ['alpha', 'beta'] }] });
  });

  it('drops only the tools of a failing or slow source and marks it degraded', async () => {
    const good = makeSource('good', async () => [tool('x-host-a-good')]);
    const bad = makeSource('bad', async () => {
      throw new Error('boom');
    });
    const slow = makeSource('slow', (ctx) => new Promise((resolve) => ctx.signal.addEventListener('abort', () => resolve([tool('x-host-a-late')]))));
    const { svc, health } = build([good, bad, slow]);
    expect((await svc.list(principal())).map((d) => d.toolId)).toEqual(['x-host-a-good']);
    const snap = health.snapshot();
    expect(snap['tool-source:good'].ok).toBe(true);
    expect(snap['tool-source:bad']).toMatchObject({ ok: false });
    expect(snap['tool-source:slow']).toMatchObject({ ok: false });
    expect(snap['tool-source:slow'].detail).toContain('50 ms');
  });

  it('leaves out descriptors that fail validation (schema, exec outside host-extension, wrong source, bad ids)', async () => {
    const s = makeSource('mixed', async () => [
      tool('x-host-a-ok'),
      { toolId: 'x-host-a-extra', source: 'host-extension', safetyTier: 'read', annotations: { readOnlyHint: true } } as unknown as ToolDescriptor,
      { toolId: 'openwop:run-shell', source: 'node-pack', safetyTier: 'exec' },
      tool('x-host-a-no/slash'),
      tool('not-prefixed'),
      { toolId: 'x-host-a-no-tier', source: 'host-extension' } as unknown as ToolDescriptor,
      tool('x-host-a-secret', { token: 'abc' } as unknown as Partial<ToolDescriptor>),
    ]);
    const { svc } = build([s]);
    expect((await svc.list(principal())).map((d) => d.toolId)).toEqual(['x-host-a-ok']);
  });

  it('caches listings per tenant for the TTL and refetches after it or on invalidation', async () => {
    let n = 0;
    const s = makeSource('counted', async (ctx) => [tool(`x-host-a-${ctx.tenant}-${++n}`)]);
    const { svc, advance } = build([s]);
    expect((await svc.list(principal())).map((d) => d.toolId)).toEqual(['x-host-a-t1-1']);
    expect((await svc.list(principal())).map((d) => d.toolId)).toEqual(['x-host-a-t1-1']);
    expect((await svc.list(principal([], 't2'))).map((d) => d.toolId)).toEqual(['x-host-a-t2-2']);
    advance(1001);
    expect((await svc.list(principal())).map((d) => d.toolId)).toEqual(['x-host-a-t1-3']);
    expect((await svc.list(principal([], 't2'))).map((d) => d.toolId)).toEqual(['x-host-a-t2-4']);
    svc.invalidate('counted', { tenant: 't1' });
    expect((await svc.list(principal())).map((d) => d.toolId)).toEqual(['x-host-a-t1-5']);
    expect((await svc.list(principal([], 't2'))).map((d) => d.toolId)).toEqual(['x-host-a-t2-4']);
  });

  it('coalesces concurrent listings into one call', async () => {
    const s = makeSource('once', async () => [tool('x-host-a-x')]);
    const { svc } = build([s]);
    await Promise.all(Array.from({ length: 20 }, () => svc.list(principal())));
    expect((s.instance as ListSource).calls).toBe(1);
  });

  it('serializes a bare array for the standard view and {tools} for compact, reusing bodies per scope set', async () => {
    const s = makeSource('json', async () => [tool('x-host-a-b', { outputSchema: { type: 'object' } }), tool('x-host-a-a', { auth: { scopes: ['s:1'] } })]);
    const { svc } = build([s]);
    const std = (await svc.listJson(principal(['other']))).body.toString('utf8');
    expect(JSON.parse(std)).toEqual([{ toolId: 'x-host-a-b', source: 'host-extension', safetyTier: 'read', outputSchema: { type: 'object' } }]);
    expect((await svc.listJson(principal(['unrelated']))).body.toString('utf8')).toBe(std);
    expect((await svc.listJson(principal(['unrelated']))).etag).toBe((await svc.listJson(principal(['other']))).etag);
    expect(JSON.parse((await svc.listJson(principal(['s:1']), { view: 'compact' })).body.toString('utf8'))).toEqual({
      tools: [
        { toolId: 'x-host-a-a', source: 'host-extension', safetyTier: 'read' },
        { toolId: 'x-host-a-b', source: 'host-extension', safetyTier: 'read' },
      ],
    });
  });

  it('refuses two sources with the same name', () => {
    const a = makeSource('dup', async () => []);
    const b = makeSource('dup', async () => []);
    expect(() => build([a, b])).toThrow(/dup/);
  });
});
