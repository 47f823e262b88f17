import type { Type } from '@nestjs/common';
import type { DeclaresEntities, EntityClass } from '../platform/database/database-schema';
import { ToolCatalogModule } from './tool-catalog';
import { PortabilityModule } from './portability';
import { ApprovalsModule } from './approvals';
import { ProposalsModule } from './proposals';
import { GoalsModule } from './goals';
import { ConnectionsModule } from './connections';
import { RunsModule } from './runs';
import { WebhooksModule } from './webhooks';
import { WorkspaceModule } from './workspace';

/** The capability modules the host mounts. Each contributes its routes, advertisers and providers, and declares its entities. */
export const CAPABILITY_MODULES: (Type<unknown> & DeclaresEntities)[] = [ToolCatalogModule, PortabilityModule, ApprovalsModule, ProposalsModule, GoalsModule, ConnectionsModule, RunsModule, WebhooksModule, WorkspaceModule];

/** The tables of every capability, as their modules declare them. */
export const CAPABILITY_ENTITIES: EntityClass[] = CAPABILITY_MODULES.flatMap((m) => m.entities ?? []);
