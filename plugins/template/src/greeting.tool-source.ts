import { Inject, Injectable } from '@nestjs/common';
import {
  PLUGIN_CONTEXT,
  PluginContext,
  ToolCallResult,
  ToolDescriptor,
  ToolInvocationContext,
  ToolListingContext,
  ToolSession,
  ToolSource,
  ToolSourceProvider,
} from '@openwop-host/plugin-sdk';
import { greet, GreetingsOptions } from './options';

export const GREET_TOOL_ID = 'x-host-example-greetings.greet';

/**
 * A tool source: one `host-extension` tool in the host's catalog (`GET /v1/tools`), invocable in tool
 * sessions and from a run's `core.tool` node.
 */
@Injectable()
@ToolSource({ source: 'host-extension', name: 'example.greetings' })
export class GreetingToolSource implements ToolSourceProvider {
  private readonly descriptor: ToolDescriptor;

  constructor(@Inject(PLUGIN_CONTEXT) private readonly ctx: PluginContext<GreetingsOptions>) {
    // Built once: the catalog expects the same object while the tool is unchanged.
    this.descriptor = {
      toolId: GREET_TOOL_ID,
      source: 'host-extension',
      title: 'Greet someone',
      description: 'Answers a greeting for a name.',
      safetyTier: 'pure',
      egress: 'none',
      replayPolicy: 'deterministic',
      ...(ctx.config.scopes?.length ? { auth: { scopes: ctx.config.scopes } } : {}),
      inputSchema: { type: 'object', required: ['name'], properties: { name: { type: 'string', minLength: 1 } }, additionalProperties: false },
      outputSchema: { type: 'object', required: ['greeting'], properties: { greeting: { type: 'string' } } },
    };
  }

  async listTools(_ctx: ToolListingContext): Promise<ToolDescriptor[]> {
    return [this.descriptor];
  }

  sampleArguments(toolId: string): Record<string, unknown> | undefined {
    return toolId === GREET_TOOL_ID ? { name: 'world' } : undefined;
  }

  async openSession(toolId: string, inv: ToolInvocationContext): Promise<ToolSession> {
    if (toolId !== GREET_TOOL_ID) throw new Error(`unknown tool ${toolId}`);
    const options = this.ctx.config;
    const logger = this.ctx.logger;
    return {
      async call(args: Record<string, unknown>): Promise<ToolCallResult> {
        if (typeof args.name !== 'string' || !args.name) return { status: 'error', error: { code: 'invalid_arguments', message: 'name must be a non-empty string' } };
        // Never log arguments or results: they may be personal data.
        logger.debug('greeting', { tenant: inv.tenant });
        return { status: 'ok', content: { greeting: greet(options, args.name) } };
      },
      async close(): Promise<void> {},
    };
  }
}
