import type { MigrationClass } from '../src/platform/database/migration-runner';
import { Platform1764680000000 } from './1764680000000-platform';

/** The migrations, in the order they run. Append only; a landed migration is never edited. */
export const MIGRATIONS: MigrationClass[] = [Platform1764680000000];
