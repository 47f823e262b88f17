import 'reflect-metadata';
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { NestFactory } from '@nestjs/core';
import { checkNodeExecutorContract, checkToolSourceContract, isPlugin, PLUGIN_CONTEXT, PluginContext } from '@openwop-host/plugin-sdk';
import plugin, { GREET_TOOL_ID, GreetingsModule, GreetingsOptions, GreetingToolSource, GreetNodeExecutor } from '../src';

/** What the host hands the plugin; here a stand-in with the options under test. */
function context(config: GreetingsOptions = {}): PluginContext<GreetingsOptions> {
  return {
    id: 'example.greetings',
    config,
    logger: { debug() {}, info() {}, warn() {}, error() {} },
    http: { fetch: (url, init) => fetch(url, init) },
    kv: { get: async () => undefined, set: async () => undefined, delete: async () => undefined },
  };
}

describe('the plugin', () => {
  it('is a branded plugin the host can load', () => {
    assert.equal(isPlugin(plugin), true);
    assert.equal(plugin.id, 'example.greetings');
    assert.match(plugin.hostRange, /^\^1\./);
  });

  it('boots in Nest with a plugin context, and its providers are injected with it', async () => {
    const app = await NestFactory.createApplicationContext(
      { module: GreetingsModule, providers: [{ provide: PLUGIN_CONTEXT, useValue: context({ greeting: 'Howdy' }) }] },
      { logger: false },
    );
    try {
      const tools = await app.get(GreetingToolSource).listTools({ tenant: 't', signal: new AbortController().signal });
      assert.deepEqual(tools.map((d) => d.toolId), [GREET_TOOL_ID]);
      const out = await app.get(GreetNodeExecutor).execute({ config: { name: 'Ada' }, signal: new AbortController().signal } as never);
      assert.deepEqual(out.outputs, { greeting: 'Howdy, Ada!' });
    } finally {
      await app.close();
    }
  });
});

describe('the tool source (SDK contract kit)', () => {
  it('conforms: its descriptor is served, its sample call answers', async () => {
    const report = await checkToolSourceContract(new GreetingToolSource(context({ greeting: 'Hi' })));
    assert.deepEqual(report.problems, []);
    assert.deepEqual(report.calls.map((c) => c.result?.content), [{ greeting: 'Hi, world!' }]);
  });

  it('answers an error result for bad arguments, and keeps the tool behind its scopes', async () => {
    const source = new GreetingToolSource(context({ scopes: ['tools:greet'] }));
    const report = await checkToolSourceContract(source, { calls: [{ toolId: GREET_TOOL_ID, args: { name: '' }, expect: 'error' }] });
    assert.deepEqual(report.problems, []);
    assert.deepEqual(report.tools[0].auth, { scopes: ['tools:greet'] });
  });
});

describe('the node executor (SDK contract kit)', () => {
  it('conforms, refuses a config without a name, and greets', async () => {
    const report = await checkNodeExecutorContract(new GreetNodeExecutor(context()), { config: { name: 'Ada' }, invalidConfigs: [{}, { name: '' }] });
    assert.deepEqual(report.problems, []);
    assert.deepEqual(report.result?.outputs, { greeting: 'Hello, Ada!' });
  });
});
