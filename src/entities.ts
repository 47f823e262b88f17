import { CAPABILITY_ENTITIES } from './capabilities';
import type { EntityClass } from './platform/database/database-schema';
import { PLATFORM_ENTITIES } from './platform/platform.entities';

/** Every entity of the host, listed explicitly (no globs): the platform's, then each capability module's `entities`. */
export const ENTITIES: EntityClass[] = [...PLATFORM_ENTITIES, ...CAPABILITY_ENTITIES];
