import { Module } from '@nestjs/common';
import { WorkspaceAdvertiser } from './workspace.advertiser';
import { WorkspaceController } from './workspace.controller';
import { WORKSPACE_ENTITIES } from './workspace.entities';
import { WorkspaceService } from './workspace.service';
import { WorkspaceStore } from './workspace-store';
import { WorkspaceSnapshots } from './workspace-snapshot';
import { WorkspaceReadExecutor } from './workspace-read.executor';

/**
 * The agent workspace (RFC 0059): a versioned, tenant·workspace-scoped file store for an agent's
 * ground-truth files, served at /v1/host/workspace/files and advertised as `workspace`, and each
 * run's read snapshot of it (`ctx.workspace`, the `core.workspace.read` node).
 */
@Module({
  controllers: [WorkspaceController],
  providers: [WorkspaceService, WorkspaceStore, WorkspaceAdvertiser, WorkspaceSnapshots, WorkspaceReadExecutor],
  exports: [WorkspaceService, WorkspaceSnapshots],
})
export class WorkspaceModule {
  static readonly entities = WORKSPACE_ENTITIES;
}
