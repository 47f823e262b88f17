import { ConfigError } from './config-error';
import { envInt } from './env-int';
import type { EnvSetting } from './env-setting';

/** The embedded engine (PGlite, src/platform/database/embedded-postgres.ts), used when DATABASE_URL is unset. */
export interface EmbeddedConfig {
  /** How long a host waits for another process to release the embedded data folder. */
  waitMs: number;
  /** PostgreSQL settings of the embedded engine over its memory-tuned defaults. */
  settings: Record<string, string>;
  /** Where the engine runs: the host's own thread (the default), or a worker thread of the host process. */
  thread: 'worker' | 'main';
}

export const EMBEDDED_ENV_SETTINGS: EnvSetting[] = [
  { name: 'OPENWOP_EMBEDDED_WAIT_MS', default: '30000', description: 'How long a starting host waits for another process (a previous host still shutting down, a CLI command) to release the embedded data folder before it gives up with one line (exit 1).' },
  { name: 'OPENWOP_EMBEDDED_PG_SETTINGS', description: 'PostgreSQL settings of the embedded engine over its memory-tuned defaults, `name=value` separated by spaces or commas (for example `shared_buffers=128MB work_mem=8MB`).' },
  {
    name: 'OPENWOP_EMBEDDED_THREAD',
    default: 'main',
    description:
      'Where the embedded engine runs: `main` (the default), the host\'s own thread, where a statement\'s answer reaches the waiting code at once; or `worker`, a thread of its own, whose start (about a second of CPU) then runs while the host loads: a gain only where a core is idle, for about 40 MB more memory and answers that wait for the host\'s event loop (fewer runs per second under load; docs/benchmarks.md, "Embedded engine against a server").',
  },
];

/** `name=value` pairs separated by spaces or commas: PostgreSQL settings. */
export function parsePgSettings(name: string, value: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const item of (value ?? '').split(/[\s,]+/).filter(Boolean)) {
    const m = /^([a-z_][a-z0-9_.]*)=([A-Za-z0-9_.:+-]+)$/.exec(item);
    if (!m) throw new ConfigError(`${name}: expected name=value PostgreSQL settings (for example shared_buffers=64MB), got "${item}"`);
    out[m[1]] = m[2];
  }
  return out;
}

export function loadEmbeddedSettings(env: NodeJS.ProcessEnv): EmbeddedConfig {
  const thread = env.OPENWOP_EMBEDDED_THREAD?.trim() || 'main';
  if (thread !== 'worker' && thread !== 'main') throw new ConfigError(`OPENWOP_EMBEDDED_THREAD must be worker or main, got "${thread}"`);
  const settings = env.OPENWOP_EMBEDDED_PG_SETTINGS?.trim();
  return {
    waitMs: envInt(env, 'OPENWOP_EMBEDDED_WAIT_MS', 30000, 0, 3_600_000),
    settings: parsePgSettings('OPENWOP_EMBEDDED_PG_SETTINGS', settings === '' ? undefined : settings),
    thread,
  };
}
