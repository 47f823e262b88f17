import type { DataSource } from 'typeorm';
import { MIGRATIONS } from '../../../migrations';
import { pendingMigrations } from '../database/migration-runner';

/** What `/readyz` and the gRPC health service answer from: ready when the database answers and no migration is pending. */
export interface Readiness {
  ready: boolean;
  database: 'ok' | 'migrations pending' | 'unreachable';
  pendingMigrations: string[];
}

/** Readiness of this replica. Degradations reported to HealthService are listed by `/readyz` but do not fail it. */
export async function checkReadiness(ds: DataSource): Promise<Readiness> {
  try {
    await ds.query('SELECT 1');
    const pending = await pendingMigrations(ds, MIGRATIONS);
    return { ready: pending.length === 0, database: pending.length ? 'migrations pending' : 'ok', pendingMigrations: pending };
  } catch {
    return { ready: false, database: 'unreachable', pendingMigrations: [] };
  }
}
