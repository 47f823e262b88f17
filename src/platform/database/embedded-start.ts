import type { HostConfig } from '../config/host-config';
import { EmbeddedLog, EmbeddedPostgres, startEmbeddedPostgres } from './embedded-postgres';

/**
 * The embedded engine a host with these settings uses: its folder, its PostgreSQL settings and
 * thread, the idle-in-transaction limit of its connections, and room on the socket for the host's
 * pool and the CLI commands that join it. `join`: a one-shot command joins a live owner instead.
 */
export function startHostEmbedded(config: Pick<HostConfig, 'dataDir'> & Partial<Pick<HostConfig, 'database' | 'embedded'>>, options: { poolSize: number; log?: EmbeddedLog; join?: boolean }): Promise<EmbeddedPostgres> {
  const emb = config.embedded;
  return startEmbeddedPostgres(config.dataDir, {
    log: options.log,
    join: options.join,
    waitMs: emb?.waitMs ?? 30_000,
    settings: emb?.settings ?? {},
    thread: emb?.thread ?? 'main',
    idleInTransactionTimeoutMs: config.database?.idleInTransactionTimeoutMs ?? 60_000,
    // This host's pool, plus room for CLI commands joining through the socket.
    maxConnections: Math.max(64, options.poolSize + 16),
  });
}

/**
 * An engine started before the host that will use it exists (`serve` starts it before it loads the
 * host's modules, so that what of its start runs off the host's thread runs meanwhile): what it logs
 * until then is kept and written to the host's logger once `attach` hands it over.
 */
export class PrestartedEmbedded {
  private target?: EmbeddedLog;
  private readonly kept: Array<[keyof EmbeddedLog, { msg: string } & Record<string, unknown>]> = [];
  readonly engine: Promise<EmbeddedPostgres>;

  constructor(config: Pick<HostConfig, 'dataDir' | 'database' | 'embedded'>) {
    const log: EmbeddedLog = {
      info: (line) => this.write('info', line),
      warn: (line) => this.write('warn', line),
      error: (line) => this.write('error', line),
    };
    this.engine = startHostEmbedded(config, { poolSize: config.database.poolSize, log });
    // Awaited by the host's database phase, which reports a failure; until then it is not unhandled.
    this.engine.catch(() => undefined);
  }

  attach(target: EmbeddedLog): void {
    this.target = target;
    for (const [level, line] of this.kept.splice(0)) target[level](line);
  }

  private write(level: keyof EmbeddedLog, line: { msg: string } & Record<string, unknown>): void {
    if (this.target) this.target[level](line);
    else this.kept.push([level, line]);
  }
}
