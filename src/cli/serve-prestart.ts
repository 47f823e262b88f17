import { HostConfig, loadHostConfig } from '../platform/config/host-config';
import { PrestartedEmbedded } from '../platform/database/embedded-start';

export interface Prestarted {
  config: HostConfig;
  /** The embedded engine, starting (no DATABASE_URL). */
  embedded?: PrestartedEmbedded;
}

/**
 * What `serve` does before it loads the host (host-commands.ts and everything it imports, a second
 * or more of the process's thread): read the settings and, for the embedded database, claim its
 * folder and start the engine, so that what of its start runs off that thread runs meanwhile (the
 * compilation of its WebAssembly; with OPENWOP_EMBEDDED_THREAD=worker, all of it). This module loads
 * only the settings and the embedded engine's files.
 */
export function prestartServe(): Prestarted {
  const config = loadHostConfig(process.env);
  return { config, embedded: config.databaseUrl ? undefined : new PrestartedEmbedded(config) };
}
