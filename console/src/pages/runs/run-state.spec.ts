import type { RunDefinition, RunEvent, RunSnapshot } from '../../api/run-model';
import { nodeDuration, nodeViews, runDuration, runEnd, runStart, timelineAxis } from './run-state';

const T0 = Date.parse('2030-01-01T00:00:00.000Z');
let seq = 0;
function ev(type: string, atMs: number, nodeId?: string, payload: Record<string, unknown> = {}): RunEvent {
  seq += 1;
  return { eventId: `e${seq}`, runId: 'r', sequence: seq, type, timestamp: new Date(T0 + atMs).toISOString(), ...(nodeId ? { nodeId } : {}), payload: { ...(nodeId ? { nodeId } : {}), ...payload } } as unknown as RunEvent;
}

const def: RunDefinition = {
  runId: 'r',
  workflowId: 'acme.gated',
  nodes: [
    { id: 'prep', typeId: 'core.noop', config: {} },
    { id: 'gate', typeId: 'core.approval', config: { title: 'Ship it?' } },
    { id: 'ship', typeId: 'core.noop', config: {} },
  ],
  edges: [
    { from: 'prep', to: 'gate' },
    { from: 'gate', to: 'ship' },
  ],
};

describe('run view: node states', () => {
  beforeEach(() => {
    seq = 0;
  });

  it('shows every node of the definition, unreached ones pending, and follows the events as they arrive', () => {
    const events: RunEvent[] = [];
    const statuses = () => nodeViews(def, undefined, events).map((v) => `${v.id}:${v.status}`);
    expect(statuses()).toEqual(['prep:pending', 'gate:pending', 'ship:pending']);
    events.push(ev('run.started', 0), ev('node.started', 10, 'prep', { typeId: 'core.noop', attempt: 1 }));
    expect(statuses()).toEqual(['prep:running', 'gate:pending', 'ship:pending']);
    events.push(ev('node.completed', 30, 'prep'), ev('node.started', 40, 'gate', { typeId: 'core.approval', attempt: 1 }), ev('node.suspended', 50, 'gate', { interruptId: 'g-1', kind: 'approval' }));
    expect(statuses()).toEqual(['prep:completed', 'gate:waiting', 'ship:pending']);
    expect(nodeViews(def, undefined, events)[1].gateId).toBe('g-1');
    events.push(ev('node.resumed', 1050, 'gate', { interruptId: 'g-1' }), ev('node.completed', 1060, 'gate'), ev('node.started', 1070, 'ship'), ev('node.completed', 1100, 'ship'), ev('run.completed', 1110));
    const views = nodeViews(def, undefined, events);
    expect(views.map((v) => v.status)).toEqual(['completed', 'completed', 'completed']);
    expect(views[1].gateId).toBeUndefined();
    // The gate's time: 10 ms executing, 1000 ms waiting on the approval, 10 ms executing again.
    expect(views[1].segments.map((s) => [s.kind, s.start - T0, s.end! - T0])).toEqual([
      ['running', 40, 50],
      ['waiting', 50, 1050],
      ['running', 1050, 1060],
    ]);
    expect(nodeDuration(views[1], Date.now())).toEqual({ running: 20, waiting: 1000 });
    expect(runStart(undefined, events)).toBe(T0);
    expect(runEnd(events)).toBe(T0 + 1110);
  });

  it('takes attempts and errors from the snapshot and the events, a retry clearing the earlier error', () => {
    const run = { runId: 'r', workflowId: 'acme.gated', status: 'running', owner: { tenant: 't' }, nodeStates: { prep: { status: 'completed', attempt: 1 } } } as unknown as RunSnapshot;
    const events = [ev('node.started', 0, 'gate', { attempt: 1 }), ev('node.failed', 5, 'gate', { error: { code: 'boom', message: 'it broke' } })];
    let [prep, gate] = nodeViews(def, run, events);
    expect([prep.status, prep.attempt]).toEqual(['completed', 1]);
    expect([gate.status, gate.error]).toEqual(['failed', { code: 'boom', message: 'it broke' }]);
    events.push(ev('node.started', 10, 'gate', { attempt: 2 }));
    [, gate] = nodeViews(def, run, events);
    expect([gate.status, gate.attempt, gate.error]).toEqual(['running', 2, undefined]);
    // Still going on: measured up to now.
    expect(nodeDuration(gate, T0 + 110).running).toBe(105);
  });

  it('stretches an execution back to the engine\'s measure when the log wrote its start and end together', () => {
    const events = [ev('run.started', 0), ev('node.started', 500, 'prep'), ev('node.completed', 500, 'prep', { durationMs: 300 })];
    const [prep] = nodeViews(def, undefined, events);
    expect(prep.segments.map((s) => [s.start - T0, s.end! - T0])).toEqual([[200, 500]]);
    // Never back over the node's own earlier stretch (its wait on an approval).
    const gated = [ev('node.started', 0, 'gate'), ev('node.suspended', 10, 'gate'), ev('node.resumed', 1000, 'gate'), ev('node.completed', 1000, 'gate', { durationMs: 5000 })];
    const [, gate] = nodeViews(def, undefined, gated);
    expect(gate.segments.map((s) => [s.kind, s.start - T0, s.end! - T0])).toEqual([
      ['running', 0, 10],
      ['waiting', 10, 1000],
      ['running', 1000, 1000],
    ]);
  });

  it('measures the run by the engine when it can, and spans the timeline over every stretch', () => {
    const events = [ev('run.started', 100), ev('node.started', 100, 'prep'), ev('node.completed', 100, 'prep', { durationMs: 300 }), ev('run.completed', 100, undefined, { durationMs: 320 })];
    expect(runDuration(undefined, events, T0 + 5000)).toBe(320);
    expect(runDuration(undefined, events.slice(0, 3), T0 + 600)).toBe(500);
    const views = nodeViews(def, undefined, events);
    // The stretched execution starts before the logged run start: the axis covers it.
    expect(timelineAxis(views, runStart(undefined, events), runEnd(events), T0 + 9999)).toEqual({ from: T0 - 200, to: T0 + 100 });
    expect(timelineAxis([], undefined, undefined, 42)).toEqual({ from: 42, to: 42 });
  });

  it('keeps nodes the definition does not name (a run without a chain), and closes open stretches at the run\'s end', () => {
    const events = [ev('run.started', 0), ev('node.started', 0, 'x', { typeId: 'core.delay' }), ev('run.cancelled', 400)];
    const [x] = nodeViews(undefined, undefined, events);
    expect([x.id, x.typeId, x.status, x.inDefinition]).toEqual(['x', 'core.delay', 'running', false]);
    expect(x.segments[0].end! - T0).toBe(400);
    expect(nodeViews(def, undefined, []).every((v) => v.inDefinition)).toBe(true);
  });
});
