import { HostConfig, loadHostConfig } from '../platform/config/host-config';
import { PrestartedEmbedded } from '../platform/database/embedded-start';

export interface Prestarted {
  config: HostConfig;
  /** The embedded engine, starting on its thread (no DATABASE_URL). */
  embedded?: PrestartedEmbedded;
}

/**
 * What `serve` does before it loads the host (host-commands.ts and everything it imports, a second
 * or more of the process's one thread): read the settings and, for the embedded database, claim its
 * folder and start the engine, whose own start (another second of CPU) then runs on its thread at
 * the same time. This module loads only the settings and the embedded engine's files.
 */
export function prestartServe(): Prestarted {
  const config = loadHostConfig(process.env);
  return { config, embedded: config.databaseUrl ? undefined : new PrestartedEmbedded(config) };
}
