import type { NodeExecutionContext, NodeExecutorProvider } from '@openwop-host/plugin-sdk';
import type { BatchEvent } from '../../../platform/events/event-log.service';
import type { ActivityLedger } from '../../../platform/idempotency/activity-ledger.service';
import type { RegisteredExecutor } from './node-executor-registry.service';
import { RunExecution } from './run-execution';
import type { Execution, ExecutionDeps } from './run-execution.types';
import type { ClaimedRow, FlushParams, FlushResult, PauseRequest, RunStore } from './run-store';
import type { DagNode, WorkflowDefinition } from '../workflow-definition';

/** A store in memory: every flush is recorded (and fenced), nothing else is in it. */
class FakeStore implements RunStore {
  readonly flushes: FlushParams[] = [];
  async flush(f: FlushParams): Promise<FlushResult> {
    this.flushes.push(structuredClone(f));
    return { fenced: true, cancel: false, pause: null };
  }
  async eventExists(): Promise<boolean> {
    return false;
  }
  async loadNodes() {
    return [];
  }
  async recordedOutcomes() {
    return new Map<string, Record<string, unknown>>();
  }
  transaction<T>(): Promise<T> {
    throw new Error('no transaction in this fake');
  }
  get events(): BatchEvent[] {
    return this.flushes.flatMap((f) => f.events);
  }
  /** The last flush: the run's end. */
  get last(): FlushParams {
    return this.flushes[this.flushes.length - 1];
  }
}

interface Step {
  ms?: number;
  fail?: string;
  costUsd?: number;
}

/** `test.step`: waits `config.ms` (aborted by the signal), then fails with `config.fail` or completes; it logs starts and ends. */
function stepExecutor(log: string[], live: { now: number; max: number }): RegisteredExecutor {
  const provider: NodeExecutorProvider = {
    async execute(ctx: NodeExecutionContext) {
      const step = ctx.config as Step;
      log.push(`start ${ctx.nodeId}`);
      live.now++;
      live.max = Math.max(live.max, live.now);
      try {
        await new Promise<void>((resolve, reject) => {
          const t = setTimeout(resolve, step.ms ?? 5);
          ctx.signal.addEventListener('abort', () => {
            clearTimeout(t);
            reject(Object.assign(new Error('aborted'), { code: 'aborted' }));
          });
        });
      } finally {
        live.now--;
      }
      log.push(`end ${ctx.nodeId}`);
      if (step.fail) throw Object.assign(new Error(`${ctx.nodeId} failed`), { code: step.fail });
      return { outputs: { from: ctx.nodeId }, costUsd: step.costUsd };
    },
  } as NodeExecutorProvider;
  return { typeId: 'test.step', provider, replayPolicy: 'deterministic' };
}

function setup(nodes: Array<[string, Step?]>, edges: Array<[string, string]>, configurable: Record<string, unknown> = {}) {
  const store = new FakeStore();
  const log: string[] = [];
  const live = { now: 0, max: 0 };
  const executor = stepExecutor(log, live);
  const def: WorkflowDefinition = {
    workflowId: 'test',
    nodes: nodes.map(([id, step]): DagNode => ({ id, typeId: 'test.step', config: { ...(step ?? {}) } })),
    edges: edges.map(([from, to]) => ({ from, to })),
  };
  const row: ClaimedRow = {
    id: '00000000-0000-4000-8000-000000000001',
    tenant: 't',
    workspace: null,
    principal: 'p',
    status: 'pending',
    workflow_id: 'test',
    definition: def,
    inputs: {},
    configurable,
    scopes: [],
    fence: 1,
    cancel_requested: false,
    node_executions: 0,
    cost_usd: 0,
    started_at: null,
  };
  const deps: ExecutionDeps = {
    store,
    events: { append: jest.fn(), wake: jest.fn(), publish: jest.fn(), closeLocalStream: jest.fn(), read: jest.fn() },
    executors: { get: (typeId: string) => (typeId === 'test.step' ? executor : undefined) },
    approvals: { open: jest.fn(), stateOf: jest.fn(async () => undefined) },
    settings: { leaseMs: 30_000, nodeConcurrency: 4, limits: { maxRunDurationMs: 60_000, maxLoopIterations: 100, maxBudgetCostUsd: 100 } },
    owner: 'test-owner',
    log: { warn: jest.fn(), error: jest.fn() },
    metrics: { nodeFinished: jest.fn(), runFinished: jest.fn() },
    artifacts: { forNode: jest.fn(() => ({ put: jest.fn() })) },
    ledger: {} as ActivityLedger,
    releaseWhenPossible: jest.fn(),
    finished: jest.fn(),
  };
  const exec: Execution = { runId: row.id, fence: row.fence, abort: new AbortController(), done: Promise.resolve() };
  const execution = new RunExecution(deps, row, exec);
  return { store, log, live, exec, deps, run: () => execution.run() };
}

const types = (events: BatchEvent[]) => events.map((e) => (e.nodeId && e.type !== 'cap.breached' ? `${e.type} ${e.nodeId}` : e.type));
const stopped = (exec: Execution, reason: 'cancel') => {
  exec.reason = reason;
  exec.abort.abort();
};

describe('RunExecution (the per-run state machine, on a fake store)', () => {
  it('runs a diamond DAG in topological order, its two branches in parallel, and completes with the sink outputs', async () => {
    const t = setup([['a'], ['b', { ms: 30 }], ['c', { ms: 30 }], ['d']], [['a', 'b'], ['a', 'c'], ['b', 'd'], ['c', 'd']]);
    await t.run();
    expect(t.log.slice(0, 2)).toEqual(['start a', 'end a']);
    expect(t.log.slice(2, 4).sort()).toEqual(['start b', 'start c']);
    expect(t.log.slice(-2)).toEqual(['start d', 'end d']);
    expect(t.live.max).toBe(2);
    const ev = types(t.store.events);
    expect(ev[0]).toBe('run.started');
    expect(ev.indexOf('node.completed a')).toBeLessThan(ev.indexOf('node.started b'));
    expect(ev.indexOf('node.completed b')).toBeLessThan(ev.indexOf('node.started d'));
    expect(ev.indexOf('node.completed c')).toBeLessThan(ev.indexOf('node.started d'));
    expect(ev[ev.length - 1]).toBe('run.completed');
    expect(t.store.last.update).toMatchObject({ status: 'completed', terminal: true, outputs: { d: { from: 'd' } } });
    expect(t.store.last.nodeExecutions).toBe(4);
    // Every flush is fenced by this claim.
    expect(new Set(t.store.flushes.map((f) => `${f.runId}/${f.owner}/${f.fence}`))).toEqual(new Set([`${'00000000-0000-4000-8000-000000000001'}/test-owner/1`]));
    expect(t.deps.metrics.runFinished).toHaveBeenCalledWith('completed', expect.objectContaining({ runId: '00000000-0000-4000-8000-000000000001', tenant: 't' }));
  });

  it('fails the run when a node fails, aborting its sibling and skipping what was not reached', async () => {
    const t = setup([['a'], ['b', { fail: 'boom' }], ['c', { ms: 5_000 }], ['d']], [['a', 'b'], ['a', 'c'], ['b', 'd'], ['c', 'd']]);
    await t.run();
    // The sibling is aborted at once (it never ends on its own) and recorded failed with its abort error.
    expect(t.log).not.toContain('end c');
    const ev = types(t.store.events);
    expect(ev).toEqual(expect.arrayContaining(['node.failed b', 'node.failed c', 'node.skipped d']));
    expect(ev).not.toContain('node.started d');
    expect(ev[ev.length - 1]).toBe('run.failed');
    expect(t.store.events[t.store.events.length - 1].payload).toMatchObject({ error: { code: 'boom' }, failedNodeId: 'b' });
    expect(t.store.last.update).toMatchObject({ status: 'failed', terminal: true, error: { code: 'boom' } });
    const writes = Object.fromEntries(t.store.flushes.flatMap((f) => f.writes).map((w) => [w.nodeId, w.status]));
    expect(writes).toEqual({ a: 'completed', b: 'failed', c: 'failed', d: 'skipped' });
  });

  it('stops on cancel: the node in flight is cancelled, no new node starts, the run ends cancelled', async () => {
    const t = setup([['a', { ms: 5_000 }], ['b']], [['a', 'b']]);
    const done = t.run();
    await new Promise((r) => setTimeout(r, 20));
    stopped(t.exec, 'cancel');
    await done;
    expect(t.log).toEqual(['start a']);
    const ev = types(t.store.events);
    expect(ev).toEqual(['run.started', 'node.started a', 'node.cancelled a', 'node.skipped b', 'run.cancelled']);
    expect(t.store.last.update).toMatchObject({ status: 'cancelled', terminal: true });
  });

  it('pauses after the current node drains: no new node starts, the run is parked paused with its lease released', async () => {
    const t = setup([['a', { ms: 30 }], ['b']], [['a', 'b']]);
    const done = t.run();
    await new Promise((r) => setTimeout(r, 10));
    t.exec.pause!({ drainPolicy: 'drain-current-node', requestedAt: new Date().toISOString() });
    await done;
    expect(t.log).toEqual(['start a', 'end a']);
    const ev = types(t.store.events);
    expect(ev).toEqual(['run.started', 'node.started a', 'node.completed a', 'run.paused']);
    expect(t.store.last.update).toEqual({ status: 'paused', release: true, paused: true });
  });

  it('breaches the loop-iterations bound before the node that would cross it, and fails the run loop_limit', async () => {
    const t = setup([['a'], ['b'], ['c']], [['a', 'b'], ['b', 'c']], { maxLoopIterations: 2 });
    await t.run();
    expect(t.log).toEqual(['start a', 'end a', 'start b', 'end b']);
    const ev = types(t.store.events);
    expect(ev.slice(-3)).toEqual(['cap.breached', 'node.skipped c', 'run.failed']);
    expect(t.store.events.find((e) => e.type === 'cap.breached')!.payload).toEqual({ kind: 'loop-iterations', limit: 2, observed: 3, nodeId: 'c' });
    expect(t.store.last.update).toMatchObject({ status: 'failed', terminal: true, error: { code: 'loop_limit' } });
  });

  it('breaches the budget-cost bound when a reported cost crosses it, aborting the branch in flight', async () => {
    const t = setup([['a'], ['b', { costUsd: 5 }], ['c', { ms: 5_000 }]], [['a', 'b'], ['a', 'c']], { maxCostUsd: 1 });
    await t.run();
    const ev = types(t.store.events);
    expect(ev).toEqual(expect.arrayContaining(['node.completed b', 'node.cancelled c', 'cap.breached']));
    expect(t.store.events.find((e) => e.type === 'cap.breached')!.payload).toMatchObject({ kind: 'budget-cost', limit: 1, observed: 5 });
    expect(t.store.last.update).toMatchObject({ status: 'failed', error: { code: 'cost_limit' } });
    expect(t.store.last.costUsd).toBe(5);
  });

  it('logs a lease that expired while the process stalled as a stall, and one whose renewals failed as the database away', async () => {
    for (const stalledMs of [17_000, undefined]) {
      const t = setup([['slow', { ms: 5000 }]], []);
      const ended = new AbortController();
      const lease = { key: t.exec.runId, signal: ended.signal, reason: undefined as string | undefined, stalledMs, drop: jest.fn(async () => undefined) };
      t.exec.lease = lease as unknown as Execution['lease'];
      const running = t.run().catch(() => undefined);
      await new Promise((r) => setTimeout(r, 20));
      lease.reason = 'expired';
      ended.abort();
      await running;
      const [line] = (t.deps.log.error as jest.Mock).mock.calls.map((c) => c[0] as Record<string, unknown>);
      if (stalledMs === undefined) expect(line).toEqual({ msg: 'run lease could not be renewed while the database was away; the run resumes when it answers', runId: t.exec.runId });
      else expect(line).toEqual({ msg: expect.stringMatching(/^run lease expired because this process stalled/), runId: t.exec.runId, stalledMs });
      expect(String(line.msg)).not.toContain(stalledMs === undefined ? 'stalled' : 'database');
      expect(t.deps.releaseWhenPossible).toHaveBeenCalledWith(t.exec.runId, 1);
    }
  });
});
