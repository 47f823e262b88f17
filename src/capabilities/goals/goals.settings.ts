import type { HostConfig } from '../../platform/config/host-config';

/** The host ceilings goal bounds are clamped to, advertised as `limits.*` (RFC 0058/0084). */
export interface GoalLimits {
  maxLoopIterations: number;
  maxRunDurationMs: number;
  maxBudgetCostUsd: number;
}

export interface OpenWopRuntimeSettings {
  baseUrl: string;
  apiKey?: string;
  workflowId: string;
  pollIntervalMs: number;
  requestTimeoutMs: number;
}

/** The `goals` section of OPENWOP_CONFIG (schemas/host-config.schema.json), with defaults applied. */
export interface GoalsSettings {
  /** The judge advertised in `agents.goals.judge` (both built-in judges are served either way). */
  judge: 'host' | 'verifier';
  requiresBounds: boolean;
  limits: GoalLimits;
  /** Interval of a `schedule` goal that names no schedule of its own. */
  defaultIntervalMs: number;
  /** The shortest interval a goal may ask for. */
  minIntervalMs: number;
  /** How long one replica's claim on a goal lasts before another replica may take it over. */
  leaseMs: number;
  /** Goals claimed per claim query. */
  batchSize: number;
  /** Goals worked on in parallel by one replica. */
  concurrency: number;
  /** Delay before retrying a worker that failed to start or report a run. */
  retryDelayMs: number;
  /** Budget of one heartbeat predicate evaluation (RFC 0060 maxRuntimeMs). */
  heartbeatMaxRuntimeMs: number;
  /** Largest heartbeat state (JSON bytes) a predicate may return. */
  heartbeatMaxStateBytes: number;
  /** Worker used by goals that name none (default: openwop-runtime when configured). */
  defaultWorker?: string;
  runtime?: OpenWopRuntimeSettings;
}

export const GOALS_SETTINGS = Symbol.for('openwop-host.goals.settings');

export const DEFAULT_GOAL_LIMITS: GoalLimits = {
  maxLoopIterations: 100,
  maxRunDurationMs: 7 * 24 * 3600 * 1000,
  maxBudgetCostUsd: 100,
};

function num(v: unknown, dflt: number): number {
  return typeof v === 'number' && Number.isFinite(v) ? v : dflt;
}

/** Reads the section; its shape was already validated against the host-config schema at start. */
export function goalsSettings(config: Pick<HostConfig, 'file'>): GoalsSettings {
  const s = (config.file.goals ?? {}) as Record<string, unknown>;
  const limits = (s.limits ?? {}) as Record<string, unknown>;
  const runtime = s.runtime as Record<string, unknown> | undefined;
  return {
    judge: s.judge === 'verifier' ? 'verifier' : 'host',
    requiresBounds: s.requiresBounds !== false,
    limits: {
      maxLoopIterations: num(limits.maxLoopIterations, DEFAULT_GOAL_LIMITS.maxLoopIterations),
      maxRunDurationMs: num(limits.maxRunDurationMs, DEFAULT_GOAL_LIMITS.maxRunDurationMs),
      maxBudgetCostUsd: num(limits.maxBudgetCostUsd, DEFAULT_GOAL_LIMITS.maxBudgetCostUsd),
    },
    defaultIntervalMs: num(s.defaultIntervalMs, 60_000),
    minIntervalMs: num(s.minIntervalMs, 1000),
    leaseMs: num(s.leaseMs, 60_000),
    batchSize: num(s.batchSize, 100),
    concurrency: num(s.concurrency, 8),
    retryDelayMs: num(s.retryDelayMs, 30_000),
    heartbeatMaxRuntimeMs: Math.min(num(s.heartbeatMaxRuntimeMs, 5000), num(limits.maxRunDurationMs, DEFAULT_GOAL_LIMITS.maxRunDurationMs)),
    heartbeatMaxStateBytes: num(s.heartbeatMaxStateBytes, 4096),
    defaultWorker: typeof s.defaultWorker === 'string' ? s.defaultWorker : undefined,
    runtime: runtime
      ? {
          baseUrl: String(runtime.baseUrl).replace(/\/+$/, ''),
          apiKey: typeof runtime.apiKey === 'string' ? runtime.apiKey : undefined,
          workflowId: String(runtime.workflowId),
          pollIntervalMs: num(runtime.pollIntervalMs, 5000),
          requestTimeoutMs: num(runtime.requestTimeoutMs, 10_000),
        }
      : undefined,
  };
}
