import type { Type } from '@nestjs/common';
import type { DeclaresEntities, EntityClass } from '../platform/database/database-schema';
import { ToolCatalogModule } from './tool-catalog/tool-catalog.module';
import { PortabilityModule } from './portability/portability.module';
import { ApprovalsModule } from './approvals/approvals.module';
import { ProposalsModule } from './proposals/proposals.module';
import { GoalsModule } from './goals/goals.module';
import { ConnectionsModule } from './connections/connections.module';
import { RunsModule } from './runs/runs.module';
import { WebhooksModule } from './webhooks/webhooks.module';

/** The capability modules the host mounts. Each contributes its routes, advertisers and providers, and declares its entities. */
export const CAPABILITY_MODULES: (Type<unknown> & DeclaresEntities)[] = [ToolCatalogModule, PortabilityModule, ApprovalsModule, ProposalsModule, GoalsModule, ConnectionsModule, RunsModule, WebhooksModule];

/** The tables of every capability, as their modules declare them. */
export const CAPABILITY_ENTITIES: EntityClass[] = CAPABILITY_MODULES.flatMap((m) => m.entities ?? []);
