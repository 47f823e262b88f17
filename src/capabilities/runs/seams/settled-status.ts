import type { EntityManager } from 'typeorm';
import type { TenantScope } from '../../../platform/identity/principal';
import { findRun } from '../run-snapshot';

const TERMINAL = new Set(['completed', 'failed', 'cancelled']);

/**
 * A seam's wait for the run it started (so its caller reads what the run wrote next): the run's status once it is
 * terminal, or as it is after `withinMs`. Reads the run every 100 ms.
 */
export async function settledStatus(db: EntityManager, scope: TenantScope, runId: string, status: string, withinMs = 30_000): Promise<string> {
  const until = Date.now() + withinMs;
  while (!TERMINAL.has(status) && Date.now() < until) {
    await new Promise((r) => setTimeout(r, 100));
    status = (await findRun(db, scope, runId))?.status ?? status;
  }
  return status;
}
