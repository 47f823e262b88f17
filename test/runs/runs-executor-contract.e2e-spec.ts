/** The plugin SDK's node-executor contract kit run on the built-in executors and on a plugin's, as the host registered them. */
import * as path from 'node:path';
import { checkNodeExecutorContract } from '@openwop-host/plugin-sdk';
import { NodeExecutorRegistry } from '../../src/capabilities/runs/engine/node-executor-registry.service';
import { createTestApp, TestApp } from '../support/test-app';

describe('runs: node executors conform to the SDK contract kit', () => {
  let t: TestApp;
  let registry: NodeExecutorRegistry;
  const provider = (typeId: string) => {
    const ex = registry.get(typeId);
    if (!ex) throw new Error(`no executor for ${typeId}`);
    return ex.provider;
  };
  const principal = { tenant: 'default', principal: 'tester', scopes: new Set(['tools:read']) };

  beforeAll(async () => {
    t = await createTestApp({ env: { OPENWOP_PLUGINS: path.join(__dirname, '../fixtures/plugins/run-plugin.ts') } });
    registry = t.app.get(NodeExecutorRegistry);
  });
  afterAll(() => t.close());

  it('registers the built-ins and the plugin executor', () => {
    expect(registry.typeIds()).toEqual(expect.arrayContaining(['core.approval', 'core.delay', 'core.noop', 'core.tool', 'vendor.test.costly']));
  });

  it('core.noop', async () => {
    const r = await checkNodeExecutorContract(provider('core.noop'), { config: { a: 1, nested: { b: [1, 2] } } });
    expect(r.problems).toEqual([]);
    expect(r.result!.outputs).toEqual({ a: 1, nested: { b: [1, 2] } });
  });

  it('core.delay: validates ms, stops on abort', async () => {
    const r = await checkNodeExecutorContract(provider('core.delay'), {
      config: { ms: 5 },
      invalidConfigs: [{}, { ms: -1 }, { ms: 1.5 }, { ms: 'soon' }, { ms: 25 * 3600 * 1000 }],
      abortConfig: { ms: 60_000 },
      abortWithinMs: 500,
    });
    expect(r.problems).toEqual([]);
    expect(r.result!.outputs).toEqual({ delayedMs: 5 });
  });

  it('core.approval: completes when granted, fails approval_denied when denied', async () => {
    const granted = await checkNodeExecutorContract(provider('core.approval'), { config: { title: 'ok?' } });
    expect(granted.problems).toEqual([]);
    expect(granted.result!.outputs).toEqual({ approved: true });
    expect((await checkNodeExecutorContract(provider('core.approval'), { approval: 'denied', expectErrorCode: 'approval_denied' })).problems).toEqual([]);
  });

  it('core.tool: calls a catalog tool in a session bracket, reports its declared cost, refuses an invisible tool', async () => {
    const r = await checkNodeExecutorContract(provider('core.tool'), {
      principal,
      config: { toolId: 'x-host-vendortest-paid', arguments: { usd: 0.25 } },
      invalidConfigs: [{}, { toolId: '' }, { toolId: 'x', arguments: [] }],
    });
    expect(r.problems).toEqual([]);
    expect(r.result).toEqual({ outputs: { paid: 0.25 }, costUsd: 0.25 });
    expect(r.events.map((e) => e.type)).toEqual(['tool.session.opened', 'agent.toolCalled', 'agent.toolReturned', 'tool.session.closed']);
    const missing = await checkNodeExecutorContract(provider('core.tool'), { principal, config: { toolId: 'mcp:nobody.nothing' }, expectErrorCode: 'tool_not_found' });
    expect(missing.problems).toEqual([]);
  });

  it('a plugin executor (vendor.test.costly), both ways of reporting cost', async () => {
    const byResult = await checkNodeExecutorContract(provider('vendor.test.costly'), { config: { usd: 0.5 }, invalidConfigs: [{}, { usd: 'x' }] });
    expect(byResult.problems).toEqual([]);
    expect(byResult.result!.costUsd).toBe(0.5);
    const byUsage = await checkNodeExecutorContract(provider('vendor.test.costly'), { config: { usd: 0.5, via: 'usage' }, abortConfig: { usd: 0.5, via: 'usage', holdMs: 60_000 }, abortWithinMs: 500 });
    expect(byUsage.problems).toEqual([]);
    expect(byUsage.events.map((e) => e.type)).toEqual(['provider.usage']);
  });
});
