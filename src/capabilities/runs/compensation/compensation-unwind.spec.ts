import type { DataSource } from 'typeorm';
import type { Plan } from './compensation-store';
import { executePlan, UnwindDeps } from './compensation-unwind';
import type { PlanEntry } from './run-compensation.entity';

const entry = (position: number): PlanEntry => ({
  ordinal: 2 - position,
  position,
  nodeId: `n${position}`,
  forwardLogicalInvocationId: `f${position}`,
  effectId: `e${position}`,
  nodeTypeId: 'test.refund',
  input: { chargeId: `c${position}` },
  retry: { maxAttempts: 2, backoffMs: 0 },
  status: 'pending',
  attempts: 0,
  attemptBudget: 2,
  downstreamKeys: [],
});

/** executePlan over a recording fake of the store's statement and the event log (the unwind's logic, not SQL). */
function harness(execute: (ctx: { attempt: number; signal: AbortSignal; effect?: (k: string, f: (key: string) => Promise<unknown>) => Promise<unknown> }) => Promise<unknown>) {
  const saves: Array<{ status: string; entries: PlanEntry[]; release: boolean }> = [];
  const events: string[] = [];
  let revision = 0;
  const m = {
    query: async (_sql: string, params: unknown[]) => {
      saves.push({ status: params[2] as string, entries: JSON.parse(params[3] as string) as PlanEntry[], release: params[5] as boolean });
      return [[{ revision: ++revision }], 1];
    },
  };
  const stopping = new AbortController();
  const deps: UnwindDeps = {
    ds: { transaction: async (fn: (m: unknown) => Promise<unknown>) => fn(m) } as unknown as DataSource,
    events: { appendBatch: async (_s: unknown, _r: unknown, items: Array<{ type: string }>) => (events.push(...items.map((i) => i.type)), []), wake: () => undefined } as unknown as UnwindDeps['events'],
    executors: { get: () => ({ provider: { execute } }) } as unknown as UnwindDeps['executors'],
    owner: 'me',
    signal: stopping.signal,
  };
  const plan: Plan = { runId: 'r', tenant: 't', workspace: null, status: 'pending', trigger: 'node-failure', planVersion: 1, profileVersion: '1', orderingModel: 'reverse-completion', exhaustedDisposition: 'record-outcome', entries: [entry(0), entry(1)], revision: 0 };
  return { deps, plan, saves, events, stopping };
}

describe('the unwind (compensation-unwind.ts)', () => {
  it('runs the plan in order, retries under the one identity, and records failures without stopping', async () => {
    const seen: string[] = [];
    const h = harness(async (ctx) => ctx.effect!('p', async (key) => {
      seen.push(`${key}#${ctx.attempt}`);
      if (key === 'e0' && ctx.attempt === 0) throw Object.assign(new Error('transient'), { code: 'down' });
      if (key === 'e1') throw Object.assign(new Error('hard'), { code: 'gone' });
    }));
    const plan = await executePlan(h.deps, h.plan, { principal: 'p', scopes: [], inputs: {} });
    expect(seen).toEqual(['e0#0', 'e0#1', 'e1#0', 'e1#1']);
    expect(plan.entries.map((e) => [e.status, e.attempts, e.downstreamKeys])).toEqual([['completed', 2, ['e0', 'e0']], ['failed', 2, ['e1', 'e1']]]);
    expect(plan.status).toBe('partial');
    expect(h.events).toEqual(['compensation.started', 'compensation.failed']);
    // Every attempt was written in flight before it ran.
    expect(h.saves.filter((s) => s.entries[0].attempts === 1 && s.entries[0].status === 'running')).not.toHaveLength(0);
    expect(h.saves[h.saves.length - 1].release).toBe(true);
  });

  it('stops with the host: the attempt in flight stays in flight (not failed) and the lease is handed back', async () => {
    let started!: () => void;
    const running = new Promise<void>((r) => (started = r));
    const h = harness((ctx) => new Promise((_, reject) => {
      started();
      ctx.signal.addEventListener('abort', () => reject(new Error('aborted')));
    }));
    const done = executePlan(h.deps, h.plan, { principal: 'p', scopes: [], inputs: {} });
    await running;
    h.stopping.abort();
    const plan = await done;
    expect(plan.status).toBe('running');
    expect(plan.entries.map((e) => [e.status, e.attempts])).toEqual([['running', 1], ['pending', 0]]);
    expect(h.events).toEqual(['compensation.started']);
    expect(h.saves[h.saves.length - 1]).toEqual(expect.objectContaining({ status: 'running', release: true }));
  });
});
