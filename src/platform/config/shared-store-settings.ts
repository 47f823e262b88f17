import { ConfigError } from './config-error';
import { envInt } from './env-int';
import type { EnvSetting } from './env-setting';

/**
 * The optional store the replicas of one deployment share (src/platform/rate-limit): a Redis server.
 * Off by default: every replica counts in its own memory. Read and checked at start, before any
 * database work, like every setting.
 */
export interface SharedStoreConfig {
  /** `redis://` or `rediss://` URL of the shared Redis; unset: no shared store. */
  redisUrl?: string;
  /** Prefix of every key the host writes there (several deployments may share one Redis). */
  keyPrefix: string;
  /** Longest wait for one Redis round trip before the request is counted in this replica instead. */
  timeoutMs: number;
}

export const SHARED_STORE_ENV_SETTINGS: EnvSetting[] = [
  {
    name: 'OPENWOP_REDIS_URL',
    description: 'A Redis server the replicas share (`redis://[:password@]host[:port][/db]`, or `rediss://` for TLS): the rate-limit counters are kept there, so a credential has one budget across all replicas instead of one per replica. Unset (the default): counters are per replica. While Redis does not answer, each replica counts in its own memory again, logs it, and `/readyz` lists the component `rate-limit-store` as degraded (docs/operations.md, "Rate limits").',
  },
  { name: 'OPENWOP_REDIS_KEY_PREFIX', default: 'openwop:', description: 'Prefix of every key the host writes to the shared Redis (letters, digits and `:_.-`, at most 64): deployments sharing one Redis server need different prefixes.' },
  { name: 'OPENWOP_REDIS_TIMEOUT_MS', default: '250', description: 'Longest wait for one round trip to the shared Redis; a slower answer counts the request in this replica\'s memory, as when Redis is down.' },
];

/** The URL without its password, for messages. */
function redacted(raw: string): string {
  return raw.replace(/^([a-z]+:\/\/)[^@/]*@/i, '$1***@');
}

function redisUrl(raw: string | undefined): string | undefined {
  if (raw === undefined) return undefined;
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new ConfigError(`OPENWOP_REDIS_URL must be a redis:// or rediss:// URL, got "${redacted(raw)}"`);
  }
  if (u.protocol !== 'redis:' && u.protocol !== 'rediss:') throw new ConfigError(`OPENWOP_REDIS_URL must be a redis:// or rediss:// URL, got "${redacted(raw)}"`);
  if (!u.hostname) throw new ConfigError('OPENWOP_REDIS_URL names no host');
  if (u.search || u.hash) throw new ConfigError('OPENWOP_REDIS_URL must have no query or fragment');
  if (u.pathname !== '' && u.pathname !== '/' && !/^\/([0-9]|1[0-5])$/.test(u.pathname)) {
    throw new ConfigError(`OPENWOP_REDIS_URL: the path must be a database number from 0 to 15, got "${u.pathname}"`);
  }
  return raw;
}

export function loadSharedStoreSettings(env: NodeJS.ProcessEnv): SharedStoreConfig {
  const str = (name: string) => (env[name] === undefined || env[name]!.trim() === '' ? undefined : env[name]!.trim());
  const keyPrefix = str('OPENWOP_REDIS_KEY_PREFIX') ?? 'openwop:';
  if (!/^[A-Za-z0-9:_.-]{1,64}$/.test(keyPrefix)) throw new ConfigError(`OPENWOP_REDIS_KEY_PREFIX must be 1-64 letters, digits or ":_.-", got "${keyPrefix}"`);
  const url = redisUrl(str('OPENWOP_REDIS_URL'));
  return {
    ...(url ? { redisUrl: url } : {}),
    keyPrefix,
    timeoutMs: envInt(env, 'OPENWOP_REDIS_TIMEOUT_MS', 250, 10, 10_000),
  };
}
