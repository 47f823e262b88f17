import type { MigrationClass } from '../src/platform/database/migration-runner';
import { Platform1764680000000 } from './1764680000000-platform';
import { Proposals1764710000000 } from './1764710000000-proposals';
import { Connections1764700000000 } from './1764700000000-connections';
import { Goals1764720000000 } from './1764720000000-goals';
import { Runs1764840000000 } from './1764840000000-runs';

/** The migrations, in the order they run. Append only; a landed migration is never edited. */
export const MIGRATIONS: MigrationClass[] = [Platform1764680000000, Proposals1764710000000, Connections1764700000000, Goals1764720000000, Runs1764840000000];
