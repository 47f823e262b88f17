import { ConfigError, HostConfig } from '../../platform/config/host-config';

/** The host ceilings run bounds are checked against, advertised as `limits.*` (RFC 0058/0084). */
export interface RunLimits {
  maxLoopIterations: number;
  maxRunDurationMs: number;
  maxBudgetCostUsd: number;
}

/** The `runs` section of OPENWOP_CONFIG (schemas/host-config.schema.json), with defaults applied. */
export interface RunsSettings {
  limits: RunLimits;
  leaseMs: number;
  claimIntervalMs: number;
  maxActiveRuns: number;
  nodeConcurrency: number;
  /** Test seams on: the conformance fixtures resolve as workflow ids and are advertised. */
  fixtures: boolean;
  instanceId: string;
  /** Whether this replica claims and executes runs at all (OPENWOP_SCHEDULER_ENABLED). */
  executing: boolean;
  interrupts: { tokenTtlMs: number };
  /** A fork that would execute a chain (or chain version) no longer installed: refused, unless `allow` (OPENWOP_FORK_UNINSTALLED_CHAINS). */
  forkUninstalledChains: 'refuse' | 'allow';
  /** The per-tenant in-flight cap of new runs (OPENWOP_RUN_INFLIGHT_CAP; 0: none) and its Retry-After. */
  admission: { inflightCap: number; retryAfterSeconds: number; tenantMaxActiveRuns?: number; fairClaims?: boolean };
  /** The `iss` of the JWTs the host verifies (OPENWOP_JWT_ISSUER): the issuer of a bearer run owner's v2 subject. */
  jwtIssuer?: string;
  /**
   * How concurrent creates' inserts are gathered (engine/run-insert-batcher.ts). On a server an idle
   * replica's insert leaves at once; on the embedded engine (no DATABASE_URL), whose statements run
   * one at a time on the host's own thread, each insert waits for the end of its turn of the event
   * loop, so the creates read in that turn leave as one statement.
   */
  insertBatching: InsertBatchOptions;
}

export const RUNS_SETTINGS = Symbol.for('openwop-host.runs.settings');

/** How inserts are gathered: at most `maxInFlight` statements out, at most `maxBatch` runs in one. */
export interface InsertBatchOptions {
  maxInFlight: number;
  maxBatch: number;
  /**
   * Whether an insert of an idle replica leaves in the same turn (the default). Off, every insert
   * waits for the end of the turn, so the inserts of the requests read in that turn leave together:
   * for a database that runs statements on the host's own thread (the embedded engine), where one
   * statement never overlaps another and an insert that left alone would never be joined.
   */
  leaveWhenIdle?: boolean;
}

export const DEFAULT_INSERT_BATCHING: InsertBatchOptions = { maxInFlight: 2, maxBatch: 64, leaveWhenIdle: true };

/** The same defaults as the goal limits: one set of host ceilings is advertised. */
const DEFAULT_LIMITS: RunLimits = { maxLoopIterations: 100, maxRunDurationMs: 7 * 24 * 3600 * 1000, maxBudgetCostUsd: 100 };

function num(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
}

/**
 * Reads the section (already validated against the host-config schema). `limits` default to the
 * `goals.limits` values: discovery advertises one `limits` block, so the two may not disagree.
 */
export function runsSettings(config: Pick<HostConfig, 'file' | 'testSeams' | 'instanceId' | 'schedulerEnabled' | 'forkUninstalledChains' | 'databaseUrl'> & Partial<Pick<HostConfig, 'admission' | 'jwt'>>): RunsSettings {
  const s = (config.file.runs ?? {}) as Record<string, unknown>;
  const own = (s.limits ?? {}) as Record<string, unknown>;
  const goals = (((config.file.goals ?? {}) as Record<string, unknown>).limits ?? {}) as Record<string, unknown>;
  const limits = {} as RunLimits;
  for (const k of Object.keys(DEFAULT_LIMITS) as Array<keyof RunLimits>) {
    const a = num(own[k]);
    const b = num(goals[k]);
    if (a !== undefined && b !== undefined && a !== b) {
      throw new ConfigError(`runs.limits.${k} (${a}) and goals.limits.${k} (${b}) disagree: the host advertises one limits block`);
    }
    limits[k] = a ?? b ?? DEFAULT_LIMITS[k];
  }
  return {
    limits,
    leaseMs: num(s.leaseMs) ?? 30_000,
    claimIntervalMs: num(s.claimIntervalMs) ?? 1000,
    maxActiveRuns: num(s.maxActiveRuns) ?? 64,
    nodeConcurrency: num(s.nodeConcurrency) ?? 4,
    fixtures: config.testSeams,
    instanceId: config.instanceId,
    executing: config.schedulerEnabled,
    interrupts: { tokenTtlMs: num(((s.interrupts ?? {}) as Record<string, unknown>).tokenTtlMs) ?? 30 * 60_000 },
    forkUninstalledChains: config.forkUninstalledChains,
    admission: config.admission ?? { inflightCap: 0, retryAfterSeconds: 5 },
    ...(config.jwt?.issuer ? { jwtIssuer: config.jwt.issuer } : {}),
    insertBatching: { ...DEFAULT_INSERT_BATCHING, leaveWhenIdle: config.databaseUrl !== undefined },
  };
}
