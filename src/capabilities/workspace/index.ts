/** The agent workspace capability (RFC 0059) as other capabilities and the transports see it: its module and its service. */
export { WorkspaceModule } from './workspace.module';
export { WorkspaceService } from './workspace.service';
export type { WorkspaceFileMeta, WorkspaceFileView } from './workspace.service';
