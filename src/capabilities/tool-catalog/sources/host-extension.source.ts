import { Inject, Injectable } from '@nestjs/common';
import {
  ToolCallResult,
  ToolDescriptor,
  ToolInvocationContext,
  ToolListingContext,
  ToolSession,
  ToolSource,
  ToolSourceProvider,
} from '@openwop-host/plugin-sdk';
import { UnprocessableError } from '../../../platform/errors/domain-error';
import { TOOL_CATALOG_SETTINGS, ToolCatalogSettings } from '../tool-catalog.config';

/** The host's own diagnostic tool: returns its arguments. Pure, scope-less, always present. */
export const ECHO_TOOL_ID = 'x-host-openwop-echo';

const ECHO_TOOL: ToolDescriptor = {
  toolId: ECHO_TOOL_ID,
  source: 'host-extension',
  title: 'Echo',
  description: 'Returns its arguments unchanged. A side-effect-free diagnostic for tool sessions.',
  inputSchema: {
    type: 'object',
    properties: { message: { type: 'string', description: 'Text to echo back.' } },
    additionalProperties: true,
  },
  outputSchema: { type: 'object' },
  egress: 'none',
  approval: 'never',
  replayPolicy: 'deterministic',
  safetyTier: 'pure',
  costHint: 'low',
  latencyHint: 'low',
};

interface DeclaredTool {
  descriptor: ToolDescriptor;
  tenants?: string[];
}

/**
 * `host-extension` tools: the built-in echo tool and the `x-host-<vendor>-*` tools the operator
 * declares in OPENWOP_CONFIG `tools.hostExtensions[]` (descriptor fields without `source`, plus an
 * optional `tenants` list). Declared tools are catalog entries only; plugins that can run their
 * tools contribute their own `host-extension` source.
 */
@Injectable()
@ToolSource({ source: 'host-extension', name: 'host-extension', hostWide: false })
export class HostExtensionToolSource implements ToolSourceProvider {
  private readonly declared: DeclaredTool[];

  constructor(@Inject(TOOL_CATALOG_SETTINGS) settings: ToolCatalogSettings) {
    this.declared = settings.hostExtensions.map((raw) => {
      const { tenants, ...fields } = raw as Record<string, unknown> & { tenants?: string[] };
      return { descriptor: { ...(fields as Omit<ToolDescriptor, 'source'>), source: 'host-extension' }, tenants };
    });
  }

  async listTools(ctx: ToolListingContext): Promise<ToolDescriptor[]> {
    return [ECHO_TOOL, ...this.declared.filter((t) => !t.tenants || t.tenants.includes(ctx.tenant)).map((t) => t.descriptor)];
  }

  sampleArguments(toolId: string): Record<string, unknown> | undefined {
    return toolId === ECHO_TOOL_ID ? { message: 'tool session self-test' } : undefined;
  }

  async openSession(toolId: string, _ctx: ToolInvocationContext): Promise<ToolSession> {
    if (toolId !== ECHO_TOOL_ID) {
      throw new UnprocessableError('tool_not_invocable', 'This host-extension tool is declared for the catalog only; the host cannot run it.', { toolId });
    }
    return {
      async call(args: Record<string, unknown>): Promise<ToolCallResult> {
        return { status: 'ok', content: structuredClone(args) };
      },
      async close(): Promise<void> {},
    };
  }
}
