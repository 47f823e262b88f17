import * as store from './run-store';
import { FlushParams, flushValues } from './run-store';
import { insertRunSql, INSERT_WRITTEN_NEWCOMER_SQL, INSERT_WRITTEN_SQL } from './run-insert';

/**
 * The engine's SQL, compared with the committed snapshot (__snapshots__/run-store.spec.ts.snap):
 * a changed statement shows in review as a changed snapshot. Update it with `npx jest
 * src/capabilities/runs/engine/run-store.spec.ts -u` only when the change is meant.
 */
describe('run-store SQL', () => {
  it('every fixed statement', () => {
    const fixed = Object.fromEntries(
      Object.entries(store)
        .filter(([name, v]) => name.endsWith('_SQL') && typeof v === 'string')
        .sort(([a], [b]) => (a < b ? -1 : 1)),
    );
    expect(Object.keys(fixed)).toEqual([
      'CLAIM_RUNS_FIFO_SQL',
      'CLAIM_RUNS_SQL',
      'CLAIM_RUN_SQL',
      'EVENT_EXISTS_SQL',
      'FLUSH_FIFO_SQL',
      'FLUSH_SQL',
      'LOCK_RUN_SQL',
      'RECORDED_OUTCOMES_SQL',
      'RELEASE_LEASES_SQL',
      'RELEASE_LEASE_NOTIFY_SQL',
      'RELEASE_LEASE_SQL',
      'RENEW_LEASES_SQL',
      'REOPEN_RUN_SQL',
    ]);
    for (const [name, sql] of Object.entries(fixed)) expect(sql).toMatchSnapshot(name);
  });

  it('the run inserts (pending; with its first write)', () => {
    expect({ claimed: insertRunSql(false), announced: insertRunSql(true), written: INSERT_WRITTEN_SQL }).toMatchSnapshot();
  });

  it("the run inserts into the newcomers' reserve (claimed or written only as the tenant's first run)", () => {
    expect({ newcomer: insertRunSql(false, true), written: INSERT_WRITTEN_NEWCOMER_SQL }).toMatchSnapshot();
  });

  const claim: Omit<FlushParams, 'update' | 'writes' | 'events' | 'eventIds'> = {
    runId: '00000000-0000-4000-8000-000000000001',
    owner: 'replica:1',
    fence: 3,
    tenant: 't',
    workspace: 'w',
    leaseMs: 30_000,
    nodeExecutions: 2,
    costUsd: 0.5,
  };
  const ids = ['00000000-0000-4000-8000-0000000000e1', '00000000-0000-4000-8000-0000000000e2'];

  // The flush statement's text never varies (FLUSH_SQL above, prepared once per connection): what a flush
  // writes is all in its values.
  it('the fenced flush: the run row only (a renewal of progress, an in-flight marker)', () => {
    expect(flushValues([{ ...claim, update: { current: 'a' }, writes: [], events: [], eventIds: [] }])).toMatchSnapshot('values');
  });

  it('the fenced flush: node rows and events (the last write per node wins; events written only when the fence matched)', () => {
    const values = flushValues([
      {
        ...claim,
        update: {},
        writes: [
          { nodeId: 'a', typeId: 'core.noop', status: 'running', attempt: 0 },
          { nodeId: 'a', typeId: 'core.noop', status: 'completed', attempt: 0, outputs: { x: 1 }, error: null, gateId: null },
        ],
        events: [
          { type: 'node.started', nodeId: 'a', payload: { nodeId: 'a' } },
          { type: 'node.completed', nodeId: 'a', payload: { nodeId: 'a', outputs: { x: 1 } } },
        ],
        eventIds: ids,
      },
    ]);
    expect(values).toMatchSnapshot('values');
    expect(JSON.parse(values[1] as string)).toEqual([{ run_id: claim.runId, node_id: 'a', status: 'completed', attempt: 0, outputs: { x: 1 }, error: null, gate_id: null }]);
  });

  it('the fenced flush: a terminal write, a pause, a suspension', () => {
    const terminal = flushValues([{ ...claim, update: { status: 'failed', error: { code: 'boom', message: 'b' }, terminal: true }, writes: [{ nodeId: 'b', typeId: 'core.fail', status: 'skipped', attempt: 0 }], events: [{ type: 'run.failed', payload: {} }], eventIds: ids.slice(0, 1) }]);
    expect(terminal).toMatchSnapshot('terminal');
    const paused = flushValues([{ ...claim, update: { status: 'paused', release: true, paused: true }, writes: [], events: [{ type: 'run.paused', payload: {} }], eventIds: ids.slice(0, 1) }]);
    expect(paused).toMatchSnapshot('paused');
    const suspended = flushValues([{ ...claim, update: { status: 'waiting-approval', release: true, current: 'gate' }, writes: [{ nodeId: 'gate', typeId: 'core.approval', status: 'waiting', attempt: 0, gateId: ids[1] }], events: [{ type: 'node.suspended', nodeId: 'gate', payload: {} }], eventIds: ids.slice(0, 1) }]);
    expect(suspended).toMatchSnapshot('suspended');
  });

  it('the flushes of several runs in one statement: each run its own fence, its own nodes and events', () => {
    const other = { ...claim, runId: '00000000-0000-4000-8000-000000000002', owner: 'replica:1', fence: 7, workspace: null };
    const values = flushValues([
      { ...claim, update: { status: 'completed', outputs: { a: {} }, terminal: true }, writes: [{ nodeId: 'a', typeId: 'core.noop', status: 'completed', attempt: 0, outputs: {} }], events: [{ type: 'run.completed', payload: {} }], eventIds: ids.slice(0, 1) },
      { ...other, update: {}, writes: [{ nodeId: 'a', typeId: 'core.noop', status: 'running', attempt: 0 }], events: [{ type: 'node.started', nodeId: 'a', payload: {} }], eventIds: ids.slice(1, 2) },
    ]);
    const runs = JSON.parse(values[0] as string) as Array<Record<string, unknown>>;
    expect(runs.map((r) => [r.id, r.fence, r.release, r.terminal, r.nodes])).toEqual([
      [claim.runId, 3, true, true, 1],
      [other.runId, 7, false, false, 1],
    ]);
    // The event counters: one per stream, in (tenant, stream) order.
    expect(values.slice(2, 5)).toEqual([['t', 't'], [claim.runId, other.runId], [1, 1]]);
  });
});
