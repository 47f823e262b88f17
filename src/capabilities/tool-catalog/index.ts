/** The tool catalog as other capabilities see it: its module, its services and the types of their calls. */
export { ToolCatalogModule } from './tool-catalog.module';
export { ToolCatalogService } from './tool-catalog.service';
export type { CatalogEntry } from './tool-catalog.service';
export { ToolSessionService, TOOL_SESSION_WORKFLOW, argsHash } from './sessions/tool-session.service';
export { PackDirectory } from './sources/pack-directory';
