import type { DataSource } from 'typeorm';
import { schemaOf } from '../database/database-schema';
import { pendingMigrations } from '../database/migration-runner';

/** A readiness check answers within this, whatever the database does (a hung one is `unreachable`). */
export const READY_DEADLINE_MS = 1500;

/** What `/readyz` and the gRPC health service answer from: ready when the database answers and no migration of its declared schema is pending. */
export interface Readiness {
  ready: boolean;
  database: 'ok' | 'migrations pending' | 'unreachable';
  pendingMigrations: string[];
}

/** One database check at a time per data source: probes arriving meanwhile share it instead of piling up on a slow database. */
const inFlight = new WeakMap<DataSource, Promise<Readiness>>();

function checkDatabase(ds: DataSource): Promise<Readiness> {
  let check = inFlight.get(ds);
  if (!check) {
    const { migrations } = schemaOf(ds);
    check = (async (): Promise<Readiness> => {
      try {
        await ds.query('SELECT 1');
        const pending = await pendingMigrations(ds, migrations);
        return { ready: pending.length === 0, database: pending.length ? 'migrations pending' : 'ok', pendingMigrations: pending };
      } catch {
        return { ready: false, database: 'unreachable', pendingMigrations: [] };
      }
    })().finally(() => inFlight.delete(ds));
    inFlight.set(ds, check);
  }
  return check;
}

/**
 * Readiness of this replica, within READY_DEADLINE_MS. Degradations reported to HealthService are
 * listed by `/readyz` but do not fail it.
 */
export async function checkReadiness(ds: DataSource): Promise<Readiness> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<Readiness>((resolve) => (timer = setTimeout(() => resolve({ ready: false, database: 'unreachable', pendingMigrations: [] }), READY_DEADLINE_MS)));
  return Promise.race([checkDatabase(ds), late]).finally(() => clearTimeout(timer));
}
