import type { RunNodeEntity } from '../run-node.entity';
import { parseDefinition, WorkflowDefinition } from '../workflow-definition';
import { DEFAULT_MAX_LOOPBACK_ITERATIONS, loggedExecutions, loopBackEdges, LoopBacks } from './loop-backs';
import { NodeBook, RunRouting } from './run-routing';

const node = (id: string, typeId = 'core.noop') => ({ id, typeId, config: {} });
/** start -> effect -> wait -> back to effect (any_success), the ordinal-loop fixture's shape. */
const dag = (settings?: Record<string, unknown>) => ({
  nodes: [node('start'), node('effect', 'core.conformance.side-effect'), node('wait', 'core.conformance.hold')],
  edges: [
    { from: 'start', to: 'effect', triggerRule: 'any_success' },
    { from: 'effect', to: 'wait' },
    { from: 'wait', to: 'effect', triggerRule: 'any_success' },
  ],
  ...(settings ? { settings } : {}),
});

function book(): NodeBook {
  return { state: new Map(), outputs: new Map(), writer: { queue: () => undefined, write: () => undefined, pendingWrite: () => false } };
}

/** Drives the routing like the engine: launches what is ready (or stops at the breach), completes it, repeats. */
function drive(def: WorkflowDefinition): { started: string[]; breach?: ReturnType<RunRouting['loopBackBreach']>; executions: Record<string, number> } {
  const r = new RunRouting(def, book());
  const started: string[] = [];
  for (let guard = 0; guard < 100; guard++) {
    const n = def.nodes.find((x) => r.step(x.id) === 'launch');
    if (!n) return { started, executions: Object.fromEntries(def.nodes.map((x) => [x.id, r.execution(x.id)])) };
    const breach = r.loopBackBreach(n.id);
    if (breach) return { started, breach, executions: Object.fromEntries(def.nodes.map((x) => [x.id, r.execution(x.id)])) };
    r.visit(n);
    started.push(`${n.id}#${r.execution(n.id)}`);
    r.settle(n.id, 'completed');
  }
  throw new Error('the loop never stopped');
}

describe('loop-backs', () => {
  it('finds the edge that closes a cycle, none in a DAG, and orders the nodes without it', () => {
    const { definition, problems } = parseDefinition('w', dag({ maxLoopbackIterations: 2 }));
    expect(problems).toEqual([]);
    expect(definition!.nodes.map((n) => n.id)).toEqual(['start', 'effect', 'wait']);
    expect(definition!.maxLoopbackIterations).toBe(2);
    expect(loopBackEdges(definition!.nodes, definition!.edges)).toEqual([{ from: 'wait', to: 'effect', triggerRule: 'any_success' }]);
    expect(loopBackEdges([node('a'), node('b')], [{ from: 'a', to: 'b' }])).toEqual([]);
    // A self-loop closes its own cycle.
    expect(loopBackEdges([node('a'), node('b')], [{ from: 'a', to: 'b', triggerRule: 'any_success' }, { from: 'b', to: 'b', triggerRule: 'any_success' }]).map((e) => e.to)).toEqual(['b']);
  });

  it('refuses a cycle that could never run again, and a bad maxLoopbackIterations', () => {
    const allSuccess = { ...dag(), edges: [{ from: 'start', to: 'effect' }, { from: 'effect', to: 'wait' }, { from: 'wait', to: 'effect' }] };
    expect(parseDefinition('w', allSuccess).problems[0].message).toMatch(/cycle back into "effect".*any_success/);
    const noEntry = { nodes: [node('a'), node('b')], edges: [{ from: 'a', to: 'b', triggerRule: 'any_success' }, { from: 'b', to: 'a', triggerRule: 'any_success' }] };
    expect(parseDefinition('w', noEntry).problems[0].message).toMatch(/cycle back into "a".*nothing enters/);
    for (const bad of [0, 1.5, '2', 10_001]) expect(parseDefinition('w', dag({ maxLoopbackIterations: bad })).problems).toEqual([{ path: '/dag/settings/maxLoopbackIterations', message: 'maxLoopbackIterations must be an integer from 1 to 10000' }]);
    // The rejected-gate loop of RFC 0223 (closed by an any_failed edge) still runs as before.
    expect(parseDefinition('w', { nodes: [node('start'), node('gate'), node('revise')], edges: [{ from: 'start', to: 'gate', triggerRule: 'any_success' }, { from: 'gate', to: 'revise', triggerRule: 'any_failed' }, { from: 'revise', to: 'gate', triggerRule: 'any_success' }] }).problems).toEqual([]);
  });

  it('executes the re-entered node maxLoopbackIterations times, each with its own ordinal, then breaches', () => {
    const { definition } = parseDefinition('w', dag({ maxLoopbackIterations: 2 }));
    const run = drive(definition!);
    expect(run.started).toEqual(['start#1', 'effect#1', 'wait#1', 'effect#2', 'wait#2']);
    expect(run.breach).toMatchObject({
      code: 'loop_limit_exceeded',
      nodeId: 'effect',
      event: { type: 'workflow.loopback-limit', nodeId: 'effect', payload: { nodeId: 'effect', iterations: 2, limit: 2 } },
    });
    // Without the setting, the schema's default bounds it.
    const unset = drive(parseDefinition('w', dag()).definition!);
    expect(unset.executions.effect).toBe(DEFAULT_MAX_LOOPBACK_ITERATIONS);
    expect(unset.breach?.event?.payload).toEqual({ nodeId: 'effect', iterations: 5, limit: 5 });
  });

  it('a DAG is never bounded by it', () => {
    const loops = new LoopBacks({ workflowId: 'w', nodes: [node('a'), node('b')], edges: [{ from: 'a', to: 'b' }], maxLoopbackIterations: 1 });
    expect(loops.targets.size).toBe(0);
    expect(loops.breach('b', 7)).toBeUndefined();
  });

  it('a resumed run counts the executions its log recorded, the one in flight included, and keeps its ordinal', async () => {
    const { definition } = parseDefinition('w', dag({ maxLoopbackIterations: 3 }));
    const def = definition!;
    const events = [
      { type: 'node.completed', nodeId: 'start', sequence: 2 },
      { type: 'node.completed', nodeId: 'effect', sequence: 4 },
      { type: 'node.completed', nodeId: 'wait', sequence: 6 },
      { type: 'node.completed', nodeId: 'effect', sequence: 8 },
    ];
    const log = { read: async (_s: unknown, _id: string, q?: { type?: string }) => events.filter((e) => e.type === q?.type) as never };
    const counts = await loggedExecutions(def, log, { tenant: 't' }, 'run');
    expect(Object.fromEntries(counts!)).toEqual({ start: 1, effect: 2, wait: 1 });
    // A DAG reads nothing.
    expect(await loggedExecutions({ workflowId: 'w', nodes: [node('a')], edges: [] }, { read: () => Promise.reject(new Error('read')) }, { tenant: 't' }, 'run')).toBeUndefined();
    const at = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s));
    const rows = [
      { nodeId: 'start', status: 'completed', updatedAt: at(1) },
      { nodeId: 'effect', status: 'completed', updatedAt: at(4) },
      { nodeId: 'wait', status: 'running', updatedAt: at(5) },
    ] as RunNodeEntity[];
    const r = new RunRouting(def, book());
    r.load(rows, counts);
    expect(r.execution('effect')).toBe(2);
    // wait is resumed in flight: the same (second) execution, not a new one.
    expect(r.step('wait')).toBe('launch');
    r.visit(node('wait'));
    expect(r.execution('wait')).toBe(2);
    r.settle('wait', 'completed');
    expect(r.loopBackBreach('effect')).toBeUndefined();
    r.visit(node('effect'));
    expect(r.execution('effect')).toBe(3);
    r.settle('effect', 'completed');
    r.visit(node('wait'));
    r.settle('wait', 'completed');
    expect(r.loopBackBreach('effect')?.event?.payload).toEqual({ nodeId: 'effect', iterations: 3, limit: 3 });
  });
});
