/** The agent workspace capability (RFC 0059) as other capabilities and the transports see it: its module, its service and the runs' snapshots. */
export { WorkspaceModule } from './workspace.module';
export { WorkspaceService } from './workspace.service';
export type { WorkspaceFileMeta, WorkspaceFileView } from './workspace.service';
export { WorkspaceSnapshots } from './workspace-snapshot';
export type { SnapshotRun } from './workspace-snapshot';
