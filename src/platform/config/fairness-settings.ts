import { envInt } from './env-int';
import type { EnvSetting } from './env-setting';

/**
 * Fair scheduling between tenants (docs/operations.md §Fair scheduling): claims always share the
 * slots out between tenants with backlogs; this caps how many runs one tenant executes at once
 * across all replicas. Off by default.
 */
export interface FairnessSettings {
  /** Most runs of one tenant executing at once (claimed and leased) across the replicas; 0: no cap. */
  tenantMaxActiveRuns: number;
}

export const FAIRNESS_ENV_SETTINGS: EnvSetting[] = [
  {
    name: 'OPENWOP_TENANT_MAX_ACTIVE_RUNS',
    default: '0',
    description:
      'Most runs of one tenant executing at once across all replicas (claimed by an engine, lease in force). A tenant at the cap keeps its further runs queued (`pending`) until one of its runs finishes or waits; other tenants\' runs are claimed meanwhile. Runs waiting on a person or an event do not count. With the cap on, a run created on a replica is claimed by a claim pass like every other (not by its own insert). 0 (the default): no cap; claims share free slots between tenants with backlogs either way (see [Fair scheduling](#fair-scheduling)).',
  },
];

export function loadFairnessSettings(env: NodeJS.ProcessEnv): FairnessSettings {
  return { tenantMaxActiveRuns: envInt(env, 'OPENWOP_TENANT_MAX_ACTIVE_RUNS', 0, 0, 10_000_000) };
}
