import { envInt } from './env-int';
import type { EnvSetting } from './env-setting';
import { FAIRNESS_ENV_SETTINGS, FairnessSettings, loadFairnessSettings } from './fairness-settings';

/**
 * Admission of new runs under load (the production profile's backpressure, spec v1
 * production-profile.md §Backpressure): how many runs one tenant may have queued or executing at
 * once before `POST /v1/runs` answers `503 service_unavailable` with `Retry-After`. Off by default
 * (the database pool's own 503s are the only capacity answers then).
 */
/** With the fair-scheduling settings (fairness-settings.ts), which the run engine reads beside admission. */
export interface AdmissionSettings extends Partial<FairnessSettings> {
  /** Most runs one tenant may have `pending` or `running` at once; 0: no cap. */
  inflightCap: number;
  /** The `Retry-After` (and `details.retryAfter`) of a capacity refusal, in seconds. */
  retryAfterSeconds: number;
}

export const ADMISSION_ENV_SETTINGS: EnvSetting[] = [
  {
    name: 'OPENWOP_RUN_INFLIGHT_CAP',
    default: '0',
    description: 'Most runs one tenant may have queued or executing (`pending` or `running`) at once. At the cap, a caller\'s new run (`POST /v1/runs`, gRPC `CreateRun`, an MCP `tools/call` of a workflow) answers `503 service_unavailable` with `Retry-After`, nothing written; runs waiting on a person, paused or finished do not count, child runs and the host\'s own launches (automations, goals) are not refused, and a replay of an `Idempotency-Key` already answered is answered as before. Advertised as `production.backpressure.inflightCap`. 0 (the default): no cap.',
  },
  ...FAIRNESS_ENV_SETTINGS,
  { name: 'OPENWOP_BACKPRESSURE_RETRY_AFTER_SECONDS', default: '5', description: 'The `Retry-After` of a run refused at OPENWOP_RUN_INFLIGHT_CAP, in seconds (0 to 86400; also `details.retryAfter` and the advertised `production.backpressure.retryAfterSeconds`).' },
];

export function loadAdmissionSettings(env: NodeJS.ProcessEnv): AdmissionSettings {
  return {
    inflightCap: envInt(env, 'OPENWOP_RUN_INFLIGHT_CAP', 0, 0, 10_000_000),
    retryAfterSeconds: envInt(env, 'OPENWOP_BACKPRESSURE_RETRY_AFTER_SECONDS', 5, 0, 86_400),
    ...loadFairnessSettings(env),
  };
}
