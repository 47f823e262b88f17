import { Module } from '@nestjs/common';
import { definePlugin } from '@openwop-host/plugin-sdk';
import { GreetNodeExecutor } from './greet.node-executor';
import { GreetingToolSource } from './greeting.tool-source';
import { GreetingsOptions, OPTIONS_SCHEMA } from './options';

export { GreetingToolSource, GREET_TOOL_ID } from './greeting.tool-source';
export { GreetNodeExecutor, GREET_NODE_TYPE } from './greet.node-executor';
export type { GreetingsOptions } from './options';

/** The providers the plugin contributes; the host finds them by their extension-point decorators. */
@Module({ providers: [GreetingToolSource, GreetNodeExecutor] })
export class GreetingsModule {}

/**
 * Load it with `OPENWOP_PLUGINS=openwop-plugin-template` and configure it in the OPENWOP_CONFIG file
 * under `plugins["example.greetings"]`.
 */
export default definePlugin<GreetingsOptions>({
  id: 'example.greetings',
  version: '0.1.0',
  // The host API it needs at run time: node executors came with 1.1 (the contract kits it tests with are 1.4).
  hostRange: '^1.1.0',
  description: 'Greets: a host-extension tool and a workflow node type.',
  configSchema: OPTIONS_SCHEMA,
  module: GreetingsModule,
});
