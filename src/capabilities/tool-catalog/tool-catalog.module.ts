import { Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { HOST_CONFIG, HostConfig } from '../../platform/config/host-config';
import { NodePackInstaller, WorkflowChainPackInstaller } from './installers/pack-installers';
import { InstalledPacksController } from './packs/installed-packs.controller';
import { InstalledPacksService } from './packs/installed-packs.service';
import { McpAdminController } from './mcp/mcp-admin.controller';
import { McpClientAdvertiser } from './mcp/mcp-client.advertiser';
import { McpClientService } from './mcp/mcp-client.service';
import { McpHostService } from './mcp/mcp-host.service';
import { McpInvokeController } from './mcp/mcp-invoke.controller';
import { McpInvokeService } from './mcp/mcp-invoke.service';
import { McpToolPinEntity } from './mcp/mcp-tool-pin.entity';
import { McpToolPinsService } from './mcp/mcp-tool-pins.service';
import { DispatchPolicyController } from './dispatch/dispatch-policy.controller';
import { ToolDispatchPolicyEntity } from './dispatch/tool-dispatch-policy.entity';
import { ToolDispatchService } from './dispatch/tool-dispatch.service';
import { ToolSessionController } from './sessions/tool-session.controller';
import { ToolSessionService } from './sessions/tool-session.service';
import { HostExtensionToolSource } from './sources/host-extension.source';
import { McpToolSource } from './sources/mcp.source';
import { PackDirectory } from './sources/pack-directory';
import { PackListingChanges } from './sources/pack-listing-changes';
import { NodePackToolSource, WorkflowToolSource } from './sources/pack.sources';
import { ToolCatalogAdvertiser } from './tool-catalog.advertiser';
import { TOOL_CATALOG_SETTINGS, toolCatalogSettings } from './tool-catalog.config';
import { ToolCatalogController } from './tool-catalog.controller';
import { CatalogClock, ToolCatalogService } from './tool-catalog.service';

/**
 * Tool catalog (RFC 0078): `GET /v1/tools[/{toolId}]`, the tool-source extension point with five
 * built-in sources (node-pack, workflow, mcp, host-extension; connector comes from the connections
 * capability), the node-pack and workflow-chain-pack installers, and tool sessions. The MCP client
 * (revision negotiation, pinned tool definitions, the operator routes and the invoke seam) lives in mcp/;
 * the governed dispatch policy every tool-calling path asks before it calls lives in dispatch/.
 */
@Module({
  imports: [DiscoveryModule],
  controllers: [ToolCatalogController, ToolSessionController, InstalledPacksController, McpAdminController, McpInvokeController, DispatchPolicyController],
  providers: [
    { provide: TOOL_CATALOG_SETTINGS, inject: [HOST_CONFIG], useFactory: (config: HostConfig) => toolCatalogSettings(config) },
    CatalogClock,
    ToolCatalogService,
    ToolSessionService,
    ToolCatalogAdvertiser,
    PackListingChanges,
    PackDirectory,
    NodePackInstaller,
    WorkflowChainPackInstaller,
    InstalledPacksService,
    NodePackToolSource,
    WorkflowToolSource,
    McpToolSource,
    HostExtensionToolSource,
    McpClientService,
    McpHostService,
    McpToolPinsService,
    McpInvokeService,
    McpClientAdvertiser,
    ToolDispatchService,
  ],
  exports: [ToolCatalogService, ToolSessionService, PackDirectory, McpClientService, McpHostService, ToolDispatchService, InstalledPacksService],
})
export class ToolCatalogModule {
  static readonly entities = [McpToolPinEntity, ToolDispatchPolicyEntity];
}
