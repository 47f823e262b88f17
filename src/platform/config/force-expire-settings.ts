import { ConfigError } from './config-error';
import type { EnvSetting } from './env-setting';

/**
 * The retention force-expire seam (src/platform/retention/force-expire.listener.ts): a loopback-only
 * listener the conformance suite's production-retention-expiry scenario calls without credentials to
 * expire one finished run now. Opened only with OPENWOP_TEST_SEAMS=true.
 */
export interface ForceExpireConfig {
  /** Port of the listener on 127.0.0.1 (0: a free one); undefined: no listener. */
  port?: number;
}

export const FORCE_EXPIRE_ENV_SETTINGS: EnvSetting[] = [
  {
    name: 'OPENWOP_TEST_FORCE_EXPIRE_PORT',
    description:
      'Test seam (only with OPENWOP_TEST_SEAMS=true, otherwise ignored): a listener on 127.0.0.1 at this port (`0`: a free one) whose `POST /runs/{runId}/expire` deletes one finished run now through the retention sweep\'s deletion, without credentials; discovery then advertises `production.retention.testForceExpire`. Unset: no listener. Never on in production.',
  },
];

export function loadForceExpireSettings(env: NodeJS.ProcessEnv): ForceExpireConfig {
  const v = env.OPENWOP_TEST_FORCE_EXPIRE_PORT?.trim();
  if (v === undefined || v === '') return {};
  if (!/^\d+$/.test(v) || Number(v) > 65_535) throw new ConfigError(`OPENWOP_TEST_FORCE_EXPIRE_PORT must be a TCP port (0 to 65535), got "${v}"`);
  return { port: Number(v) };
}
