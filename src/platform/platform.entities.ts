import type { EntityClass } from './database/database-schema';
import { InstalledArtifactEntity } from './artifacts/installed-artifact.entity';
import { EventEntity, EventStreamEntity } from './events/event.entities';
import { ActivityInvocationEntity, IdempotencyRecordEntity } from './idempotency/idempotency.entities';
import { ApiKeyEntity } from './identity/api-key.entity';
import { ScimGroupEntity, ScimUserEntity } from './identity/scim/scim.entities';
import { ConsoleSessionEntity } from './identity/console-session.entity';
import { SamlMessageEntity } from './identity/saml/saml-message.entity';
import { PluginStateEntity } from './plugins/plugin-state.entity';
import { ScheduledTaskEntity } from './scheduler/scheduled-task.entity';

/** The platform's own tables (keys, the event log, the pack registry, plugin state, scheduled tasks, idempotency). */
export const PLATFORM_ENTITIES: readonly EntityClass[] = [
  ApiKeyEntity,
  EventStreamEntity,
  EventEntity,
  InstalledArtifactEntity,
  PluginStateEntity,
  ScheduledTaskEntity,
  IdempotencyRecordEntity,
  ActivityInvocationEntity,
  ScimUserEntity,
  ScimGroupEntity,
  ConsoleSessionEntity,
  SamlMessageEntity,
];
