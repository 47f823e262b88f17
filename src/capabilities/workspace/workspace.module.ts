import { Module } from '@nestjs/common';
import { WorkspaceAdvertiser } from './workspace.advertiser';
import { WorkspaceController } from './workspace.controller';
import { WORKSPACE_ENTITIES } from './workspace.entities';
import { WorkspaceService } from './workspace.service';
import { WorkspaceStore } from './workspace-store';

/**
 * The agent workspace (RFC 0059): a versioned, tenant·workspace-scoped file store for an agent's
 * ground-truth files, served at /v1/host/workspace/files and advertised as `workspace`.
 */
@Module({
  controllers: [WorkspaceController],
  providers: [WorkspaceService, WorkspaceStore, WorkspaceAdvertiser],
  exports: [WorkspaceService],
})
export class WorkspaceModule {
  static readonly entities = WORKSPACE_ENTITIES;
}
