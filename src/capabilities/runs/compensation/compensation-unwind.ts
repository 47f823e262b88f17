import { NodeExecutionContext } from '@openwop-host/plugin-sdk';
import type { DataSource } from 'typeorm';
import type { BatchEvent, EventLogService } from '../../../platform/events/event-log.service';
import type { NodeExecutorRegistry } from '../engine/node-executor-registry.service';
import { foldSettled } from './compensation-plan';
import { compensationStore, Plan } from './compensation-store';
import type { PlanEntry } from './run-compensation.entity';

/** How long an unwind's hold on a plan lasts without a write (each write renews it). */
export const UNWIND_LEASE_MS = 60_000;
/** One attempt of an inverse action without a declared timeout is bounded by this. */
export const DEFAULT_ATTEMPT_TIMEOUT_MS = 30_000;

/** What executing a plan needs. */
export interface UnwindDeps {
  ds: DataSource;
  events: Pick<EventLogService, 'appendBatch' | 'wake'>;
  executors: Pick<NodeExecutorRegistry, 'get'>;
  owner: string;
  /** Aborted when the host stops: the unwind stops where it is, hands its lease back, and a replica resumes it. */
  signal?: AbortSignal;
}

/** The run's principal, as the forward nodes ran under it (the plan's tenant and workspace). */
export interface RunPrincipal {
  principal: string;
  scopes: string[];
  inputs: Record<string, unknown>;
}

export class PlanChanged extends Error {
  constructor() {
    super('the compensation plan was changed meanwhile');
  }
}

const TERMINAL_ENTRY = new Set(['completed', 'failed', 'skipped', 'terminated', 'irreversible']);
export const compensationId = (runId: string) => `cmp-${runId}`;

function base(plan: Plan, e?: PlanEntry): Record<string, unknown> {
  return { compensationId: compensationId(plan.runId), orderingModel: plan.orderingModel, ...(e ? { nodeId: e.nodeId, effectId: e.effectId } : {}) };
}

/**
 * Writes the plan (conditional on its revision) and appends `events` to the run's log in one
 * transaction: the outcome is durable before anything acts on it, and the log says what the plan says.
 */
export async function commitPlan(d: Pick<UnwindDeps, 'ds' | 'events'>, plan: Plan, events: BatchEvent[], opts: { owner?: string; leaseMs?: number; release?: boolean } = {}): Promise<void> {
  const revision = await d.ds.transaction(async (m) => {
    const rev = await compensationStore.save(m, plan, opts);
    if (rev === undefined) throw new PlanChanged();
    if (events.length) await d.events.appendBatch({ tenant: plan.tenant, workspace: plan.workspace ?? undefined }, plan.runId, events, m);
    return rev;
  });
  plan.revision = revision;
  if (events.length) d.events.wake();
}

/**
 * Executes a claimed plan (RFC 0151 §C) to its end or to a hold: each inverse action in plan order,
 * only once every action before it has a recorded outcome; each attempt written as in flight before
 * it starts and its outcome written before the next step, so a host restarted mid-unwind resumes from
 * the plan (a completed action is never run again, the in-flight one is re-presented under the same
 * identity). An action failing retries under its bounds with the same identity; exhausted, it is
 * recorded failed (`compensation.failed`, `retries-exhausted`) and the unwind goes on, or, under
 * `exhaustedDisposition: manual-intervention`, the plan is held for an operator (`manual`).
 */
export async function executePlan(d: UnwindDeps, plan: Plan, run: RunPrincipal): Promise<Plan> {
  const lease = { owner: d.owner, leaseMs: UNWIND_LEASE_MS };
  for (const entry of [...plan.entries].sort((a, b) => a.position - b.position)) {
    if (TERMINAL_ENTRY.has(entry.status)) continue;
    if (entry.status === 'held') break;
    if (d.signal?.aborted) return stop(d, plan);
    const first = plan.status === 'pending';
    plan.status = 'running';
    entry.status = 'running';
    await commitPlan(d, plan, first ? [{ type: 'compensation.started', payload: { ...base(plan, entry), attempt: entry.attempts + 1 } }] : [], lease);
    const outcome = await attemptEntry(d, plan, entry, run);
    if (outcome === 'held') return plan;
    if (outcome === 'stopped') return stop(d, plan);
  }
  const settled = foldSettled(plan.entries);
  plan.status = settled;
  await commitPlan(d, plan, settled === 'completed' ? [{ type: 'compensation.completed', payload: base(plan) }] : [], { release: true });
  return plan;
}

/** The host stops: the plan stays as recorded (an action in flight stays in flight) and its lease is handed back. */
async function stop(d: UnwindDeps, plan: Plan): Promise<Plan> {
  await commitPlan(d, plan, [], { release: true });
  return plan;
}

/** Attempts one inverse action under its bounds: done (completed or failed), held for an operator, or stopped with the host. */
async function attemptEntry(d: UnwindDeps, plan: Plan, entry: PlanEntry, run: RunPrincipal): Promise<'done' | 'held' | 'stopped'> {
  const timeoutMs = entry.timeoutMs ?? DEFAULT_ATTEMPT_TIMEOUT_MS;
  const lease = { owner: d.owner, leaseMs: timeoutMs + UNWIND_LEASE_MS };
  while (entry.attempts < entry.attemptBudget) {
    if (d.signal?.aborted) return 'stopped';
    const attempt = entry.attempts;
    entry.attempts += 1;
    await commitPlan(d, plan, [], lease);
    const keys: string[] = [];
    try {
      await invoke(d, plan, entry, run, attempt, timeoutMs, keys);
      entry.downstreamKeys.push(...keys);
      entry.status = 'completed';
      delete entry.lastError;
      await commitPlan(d, plan, [], lease);
      return 'done';
    } catch (e) {
      if (e instanceof PlanChanged) throw e;
      entry.downstreamKeys.push(...keys);
      // Stopped by the host, not failed: the attempt stays in flight and is presented again on resume.
      if (d.signal?.aborted) return 'stopped';
      const code = typeof (e as { code?: unknown }).code === 'string' ? (e as { code: string }).code : 'inverse_action_failed';
      entry.lastError = { code, message: String((e as Error).message ?? e).slice(0, 500) };
      if (entry.attempts < entry.attemptBudget) {
        await commitPlan(d, plan, [], lease);
        if (entry.retry.backoffMs) await pause(entry.retry.backoffMs, d.signal);
        if (d.signal?.aborted) return 'stopped';
      }
    }
  }
  const events: BatchEvent[] = [{ type: 'compensation.failed', payload: { ...base(plan, entry), attempt: entry.attempts, reason: 'retries-exhausted' } }];
  entry.reason = 'retries-exhausted';
  if (plan.exhaustedDisposition === 'manual-intervention') {
    entry.status = 'held';
    plan.status = 'manual';
    events.push({ type: 'compensation.manual_intervention_required', payload: { ...base(plan, entry), reason: 'retries-exhausted' } });
    await commitPlan(d, plan, events, { release: true });
    return 'held';
  }
  entry.status = 'failed';
  await commitPlan(d, plan, events, lease);
  return 'done';
}

function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const stopped = () => (clearTimeout(t), resolve());
    const t = setTimeout(() => (signal?.removeEventListener('abort', stopped), resolve()), ms);
    signal?.addEventListener('abort', stopped, { once: true });
  });
}

/** One attempt: the inverse node type executed with the recorded input, its effects keyed by the action's identity. */
async function invoke(d: UnwindDeps, plan: Plan, entry: PlanEntry, run: RunPrincipal, attempt: number, timeoutMs: number, keys: string[]): Promise<void> {
  const ex = entry.nodeTypeId ? d.executors.get(entry.nodeTypeId) : undefined;
  if (!ex) throw Object.assign(new Error(`No executor serves ${entry.nodeTypeId}.`), { code: 'unknown_node_type' });
  const abort = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  let stopping: (() => void) | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      abort.abort();
      reject(Object.assign(new Error(`The inverse action did not finish within ${timeoutMs} ms.`), { code: 'inverse_action_timeout' }));
    }, timeoutMs);
    // The host stopping ends the attempt at once (the executor sees its signal aborted).
    stopping = () => (abort.abort(), reject(Object.assign(new Error('The host is stopping.'), { code: 'host_stopping' })));
    d.signal?.addEventListener('abort', stopping, { once: true });
  });
  const scope = { tenant: plan.tenant, workspace: plan.workspace ?? undefined };
  let effects = 0;
  const refuse = () => Promise.reject(Object.assign(new Error('An inverse action cannot wait for a human on this host.'), { code: 'inverse_action_interrupt' }));
  const ctx: NodeExecutionContext = {
    runId: plan.runId,
    nodeId: entry.nodeId,
    typeId: entry.nodeTypeId!,
    config: (entry.input && typeof entry.input === 'object' && !Array.isArray(entry.input) ? entry.input : {}) as Record<string, unknown>,
    runInputs: run.inputs,
    inputs: {},
    attempt,
    principal: { ...scope, principal: run.principal, scopes: new Set(run.scopes) },
    signal: abort.signal,
    emit: async (type, payload) => {
      const [view] = await d.events.appendBatch(scope, plan.runId, [{ type, nodeId: entry.nodeId, payload }]);
      return { eventId: view.eventId };
    },
    awaitApproval: refuse,
    interrupt: refuse,
    // The identity is the idempotency key of every attempt; a second effect of one action gets `.<n>` after it.
    effect: (_providerKey, perform) => {
      const key = effects++ ? `${entry.effectId}.${effects - 1}` : entry.effectId;
      keys.push(key);
      return perform(key);
    },
  };
  try {
    await Promise.race([ex.provider.execute(ctx), timedOut]);
  } finally {
    clearTimeout(timer);
    if (stopping) d.signal?.removeEventListener('abort', stopping);
  }
}
