import type { RunNodeEntity } from '../run-node.entity';
import type { WorkflowDefinition } from '../workflow-definition';
import { NodeBook, RunRouting } from './run-routing';

const node = (id: string) => ({ id, typeId: 'core.noop', config: {} });
/** start -> gate; gate -(any_failed)-> revise -> gate; gate -> done. */
const LOOP: WorkflowDefinition = {
  workflowId: 'w',
  nodes: ['start', 'gate', 'revise', 'done'].map(node),
  edges: [
    { from: 'start', to: 'gate', triggerRule: 'any_success' },
    { from: 'gate', to: 'revise', triggerRule: 'any_failed' },
    { from: 'revise', to: 'gate', triggerRule: 'any_success' },
    { from: 'gate', to: 'done' },
  ],
};

function book(): NodeBook & { events: string[] } {
  const events: string[] = [];
  return {
    events,
    state: new Map(),
    outputs: new Map(),
    writer: { queue: (e) => void events.push(`${e.type}:${e.nodeId}`), write: () => undefined, pendingWrite: () => false },
  };
}
const steps = (r: RunRouting, def: WorkflowDefinition) => Object.fromEntries(def.nodes.map((n) => [n.id, r.step(n.id) ?? '-']));

describe('RunRouting', () => {
  it('starts a DAG node once its sources completed, and never again', () => {
    const r = new RunRouting(LOOP, book());
    expect(steps(r, LOOP)).toEqual({ start: 'launch', gate: '-', revise: '-', done: '-' });
    r.visit(node('start'));
    r.settle('start', 'completed');
    expect(steps(r, LOOP)).toEqual({ start: '-', gate: 'launch', revise: '-', done: '-' });
    expect(r.visit(node('gate'))).toBe(false);
    r.settle('gate', 'completed');
    // revise can never fire (its any_failed source completed) and never ran: skipped; done fires.
    expect(steps(r, LOOP)).toEqual({ start: '-', gate: '-', revise: 'skip', done: 'launch' });
  });

  it('runs a rejected gate again after the loop, as a new execution that forgets its gate and outputs', () => {
    const b = book();
    const r = new RunRouting(LOOP, b);
    r.visit(node('start'));
    r.settle('start', 'completed');
    r.visit(node('gate'));
    b.state.set('gate', { nodeId: 'gate', gateId: 'g1', status: 'failed', attempt: 0 } as RunNodeEntity);
    b.outputs.set('gate', { stale: true });
    r.settle('gate', 'failed');
    // done's all_success edge can never be satisfied by this visit: skipped; revise fires.
    expect(steps(r, LOOP)).toEqual({ start: '-', gate: '-', revise: 'launch', done: 'skip' });
    r.skip(node('done'), 'trigger-rule-unsatisfied');
    expect(b.events).toEqual(['node.skipped:done']);
    r.visit(node('revise'));
    r.settle('revise', 'completed');
    expect(r.step('gate')).toBe('launch');
    expect(r.visit(node('gate'))).toBe(true);
    expect(b.state.get('gate')?.gateId).toBeNull();
    expect(b.outputs.has('gate')).toBe(false);
    expect(r.step('gate')).toBeUndefined();
    // Accepted on this visit: done, skipped after the first, fires now.
    r.settle('gate', 'completed');
    expect(steps(r, LOOP)).toEqual({ start: '-', gate: '-', revise: '-', done: 'launch' });
  });

  it('resumes from the rows in the order they were written: in-flight nodes start again, settled ones stay settled', () => {
    const at = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s));
    const rows = [
      { nodeId: 'gate', status: 'waiting', updatedAt: at(3) },
      { nodeId: 'start', status: 'completed', updatedAt: at(1) },
      { nodeId: 'revise', status: 'completed', updatedAt: at(2) },
    ] as RunNodeEntity[];
    const r = new RunRouting(LOOP, book());
    r.load(rows);
    // gate was asked again after revise ran: it resumes once; revise's completion is older than gate's start.
    expect(steps(r, LOOP)).toEqual({ start: '-', gate: 'launch', revise: '-', done: '-' });
    r.visit(node('gate'));
    expect(r.step('gate')).toBeUndefined();
    r.settle('gate', 'completed');
    expect(steps(r, LOOP)).toEqual({ start: '-', gate: '-', revise: '-', done: 'launch' });
  });
});
