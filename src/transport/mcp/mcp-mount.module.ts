import { DynamicModule, Module } from '@nestjs/common';
import { ApprovalsModule } from '../../capabilities/approvals';
import { RunsModule } from '../../capabilities/runs';
import { ToolCatalogModule } from '../../capabilities/tool-catalog';
import type { HostConfig } from '../../platform/config/host-config';
import { seamAliasesOf } from '../../platform/seams/seam-alias';
import { McpCalls } from './mcp-calls';
import { McpExposure } from './mcp-exposure';
import { McpMountAdvertiser } from './mcp-mount.advertiser';
import { McpMountController } from './mcp-mount.controller';
import { McpMountErrorFilter } from './mcp-mount.errors';
import { McpMountService } from './mcp-mount.service';
import { McpSampling } from './mcp-sampling';
import { McpLegacySessions } from './mcp-legacy-session';
import { McpTasks } from './mcp-tasks';
import { McpTaskSubscriptions } from './mcp-tasks-listen';

/**
 * The MCP transport: the host as an MCP server (src/transport/mcp). It calls the runs, approvals
 * and tool-catalog capabilities through their index.ts only, like the gRPC transport. Mounted
 * unless OPENWOP_MCP_SERVER=false.
 */
@Module({})
export class McpTransportModule {
  static forRoot(config: Pick<HostConfig, 'mcpMount'>): DynamicModule {
    if (!config.mcpMount.enabled) return { module: McpTransportModule };
    return {
      module: McpTransportModule,
      imports: [RunsModule, ApprovalsModule, ToolCatalogModule],
      controllers: [McpMountController, seamAliasesOf(McpMountController)],
      providers: [McpExposure, McpCalls, McpSampling, McpLegacySessions, McpTasks, McpTaskSubscriptions, McpMountService, McpMountAdvertiser, McpMountErrorFilter],
    };
  }
}
