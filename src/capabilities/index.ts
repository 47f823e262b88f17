import type { Type } from '@nestjs/common';
import { ToolCatalogModule } from './tool-catalog/tool-catalog.module';
import { PortabilityModule } from './portability/portability.module';
import { ProposalsModule } from './proposals/proposals.module';
import { GoalsModule } from './goals/goals.module';
import { ConnectionsModule } from './connections/connections.module';
import { RunsModule } from './runs/runs.module';
import { WebhooksModule } from './webhooks/webhooks.module';

/** The capability modules the host mounts. Each contributes its routes, advertisers and providers. */
export const CAPABILITY_MODULES: Type<unknown>[] = [ToolCatalogModule, PortabilityModule, ProposalsModule, GoalsModule, ConnectionsModule, RunsModule, WebhooksModule];
