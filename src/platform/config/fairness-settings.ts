import { ConfigError } from './config-error';
import { envInt } from './env-int';
import type { EnvSetting } from './env-setting';

/**
 * Fair scheduling between tenants (docs/operations.md §Fair scheduling): whether claims share the
 * free slots out between tenants with backlogs (off by default: oldest first, the cheaper claim), and
 * how many runs one tenant executes at once across all replicas (a cap turns fair claims on).
 */
export interface FairnessSettings {
  /** Most runs of one tenant executing at once (claimed and leased) across the replicas; 0: no cap. */
  tenantMaxActiveRuns: number;
  /** Claims share slots between tenants with backlogs (fewest executing first); else oldest first. */
  fairClaims: boolean;
}

export const FAIRNESS_ENV_SETTINGS: EnvSetting[] = [
  {
    name: 'OPENWOP_FAIR_CLAIMS',
    default: 'false',
    description:
      'Share the run engine\'s free slots between tenants with backlogs: each claim takes first from the tenant with the fewest runs executing, then the oldest run, so one tenant\'s thousands of queued runs do not hold back another tenant\'s single run. `false` (the default): oldest run first, whatever its tenant, the cheaper claim (about 15% more runs a second on one tenant, docs/benchmarks.md). On by itself while OPENWOP_TENANT_MAX_ACTIVE_RUNS is set. Turn it on for a host many tenants share (see [Fair scheduling](#fair-scheduling)).',
  },
  {
    name: 'OPENWOP_TENANT_MAX_ACTIVE_RUNS',
    default: '0',
    description:
      'Most runs of one tenant executing at once across all replicas (claimed by an engine, lease in force). A tenant at the cap keeps its further runs queued (`pending`) until one of its runs finishes or waits; other tenants\' runs are claimed meanwhile. Runs waiting on a person or an event do not count. With the cap on, claims are fair (OPENWOP_FAIR_CLAIMS) and a run created on a replica is claimed by a claim pass like every other (not by its own insert). 0 (the default): no cap (see [Fair scheduling](#fair-scheduling)).',
  },
];

export function loadFairnessSettings(env: NodeJS.ProcessEnv): FairnessSettings {
  const tenantMaxActiveRuns = envInt(env, 'OPENWOP_TENANT_MAX_ACTIVE_RUNS', 0, 0, 10_000_000);
  const raw = env.OPENWOP_FAIR_CLAIMS?.trim();
  if (raw && !/^(true|false|1|0|yes|no|on|off)$/i.test(raw)) throw new ConfigError(`OPENWOP_FAIR_CLAIMS must be true or false, got "${raw}"`);
  const fairClaims = tenantMaxActiveRuns > 0 || (raw ? /^(true|1|yes|on)$/i.test(raw) : false);
  return { tenantMaxActiveRuns, fairClaims };
}
