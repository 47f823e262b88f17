import * as store from './run-store';
import { FlushParams, flushStatement } from './run-store';

/**
 * The engine's SQL, compared with the committed snapshot (__snapshots__/run-store.spec.ts.snap):
 * a changed statement shows in review as a changed snapshot. Update it with `npx jest
 * src/capabilities/runs/run-store.spec.ts -u` only when the change is meant.
 */
describe('run-store SQL', () => {
  it('every fixed statement', () => {
    const fixed = Object.fromEntries(
      Object.entries(store)
        .filter(([name, v]) => name.endsWith('_SQL') && typeof v === 'string')
        .sort(([a], [b]) => (a < b ? -1 : 1)),
    );
    expect(Object.keys(fixed)).toEqual([
      'CLAIM_RUNS_SQL',
      'CLAIM_RUN_SQL',
      'EVENT_EXISTS_SQL',
      'LOCK_RUN_SQL',
      'RECORDED_OUTCOMES_SQL',
      'RELEASE_LEASE_NOTIFY_SQL',
      'RELEASE_LEASE_SQL',
      'RELEASE_OWNER_LEASES_SQL',
      'RENEW_LEASE_SQL',
      'REOPEN_RUN_SQL',
    ]);
    for (const [name, sql] of Object.entries(fixed)) expect(sql).toMatchSnapshot(name);
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

  it('the fenced flush: the run row only (a renewal of progress, an in-flight marker)', () => {
    const s = flushStatement({ ...claim, update: { current: 'a' }, writes: [], events: [], eventIds: [] });
    expect(s.sql).toMatchSnapshot('sql');
    expect(s.params).toMatchSnapshot('params');
  });

  it('the fenced flush: node rows and events (the event log insert, written only when the fence matched)', () => {
    const s = flushStatement({
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
    });
    expect(s.sql).toMatchSnapshot('sql');
    expect(s.params).toMatchSnapshot('params');
  });

  it('the fenced flush: a terminal write, and a pause', () => {
    const terminal = flushStatement({ ...claim, update: { status: 'failed', error: { code: 'boom', message: 'b' }, terminal: true }, writes: [{ nodeId: 'b', typeId: 'core.fail', status: 'skipped', attempt: 0 }], events: [{ type: 'run.failed', payload: {} }], eventIds: ids.slice(0, 1) });
    expect(terminal.sql).toMatchSnapshot('terminal');
    const paused = flushStatement({ ...claim, update: { status: 'paused', release: true, paused: true }, writes: [], events: [{ type: 'run.paused', payload: {} }], eventIds: ids.slice(0, 1) });
    expect(paused.sql).toMatchSnapshot('paused');
    const suspended = flushStatement({ ...claim, update: { status: 'waiting-approval', release: true, current: 'gate' }, writes: [{ nodeId: 'gate', typeId: 'core.approval', status: 'waiting', attempt: 0, gateId: ids[1] }], events: [{ type: 'node.suspended', nodeId: 'gate', payload: {} }], eventIds: ids.slice(0, 1) });
    expect(suspended.sql).toMatchSnapshot('suspended');
  });
});
