/**
 * A run this replica created and executes is followed without reading the log: the engine is its
 * stream's only writer, so openRun answers from what it wrote (status and events, exactly what the
 * log holds), never to a caller who may not see the run; a write that did not come from the engine
 * sends followers back to the log.
 */
import * as pg from 'pg';
import { EventLogService } from '../../src/platform/events/event-log.service';
import { createTestApp, TestApp } from '../support/test-app';
import { installChains, runEvents, waitForStatus } from './run-kit';

describe('runs: followers of a run created here', () => {
  let t: TestApp;
  let key: string;
  let events: EventLogService;

  beforeAll(async () => {
    t = await createTestApp();
    key = await t.key({ scopes: ['runs:create', 'runs:read'] });
    await installChains(t, 'default', 'vendor.test.local-stream', {
      'vendor.test.local-two': {
        nodes: [
          { id: 'a', typeId: 'core.noop', config: {} },
          { id: 'b', typeId: 'core.noop', config: { x: 1 } },
        ],
        edges: [{ from: 'a', to: 'b' }],
      },
      'vendor.test.local-slow': { nodes: [{ id: 'wait', typeId: 'core.delay', config: { ms: 400 } }], edges: [] },
      'vendor.test.local-gate': { nodes: [{ id: 'gate', typeId: 'core.approval', config: { title: 'Ship?' } }], edges: [] },
    });
    events = t.app.get(EventLogService);
  });

  afterAll(async () => {
    await t?.close();
  });

  /** Runs `fn` and answers it with the number of opening reads of the log it sent. */
  async function countingOpenReads<T>(fn: () => Promise<T>): Promise<{ value: T; reads: number }> {
    const spy = jest.spyOn(pg.Client.prototype, 'query');
    try {
      const value = await fn();
      // By its text: named where the connection prepares statements, unnamed on the embedded engine.
      const text = (q: unknown) => (typeof q === 'string' ? q : ((q as { text?: string } | null)?.text ?? ''));
      const reads = spy.mock.calls.filter(([q]) => text(q).includes('AS "run_status"')).length;
      return { value, reads };
    } finally {
      spy.mockRestore();
    }
  }

  /** Starts a run of `workflowId` here, and waits for one of `statuses` when given. */
  async function create(workflowId: string, statuses?: string[]): Promise<string> {
    const created = await t.http('POST', '/v1/runs', { token: key, body: { workflowId } });
    expect(created.status).toBe(201);
    const runId = created.body.runId as string;
    if (statuses) await waitForStatus(t, key, runId, statuses);
    return runId;
  }

  /** Opens a follower of the run from its start, as the default tenant, counting the log reads it sent. */
  const openCounting = (runId: string) => countingOpenReads(() => events.openRun({ tenant: 'default' }, runId, 0));

  it('answers a finished run with its final status and every event, as the log holds them, without reading it', async () => {
    const runId = await create('vendor.test.local-two', ['completed']);
    const { value: opened, reads } = await openCounting(runId);
    expect(reads).toBe(0);
    expect(opened!.status).toBe('completed');
    expect(opened!.runId).toBe(runId);
    const fromLog = await events.read({ tenant: 'default' }, runId, { afterSequence: 0 });
    expect(fromLog.map((e) => e.type)).toEqual(['run.started', 'node.started', 'node.completed', 'node.started', 'node.completed', 'run.completed']);
    expect(JSON.parse(JSON.stringify(opened!.events))).toEqual(JSON.parse(JSON.stringify(fromLog)));
    // From a sequence on, as a resuming follower asks; and an upper-case id names the same run.
    const resumed = await events.openRun({ tenant: 'default' }, runId.toUpperCase(), 3);
    expect(resumed!.runId).toBe(runId);
    expect(resumed!.events.map((e) => e.sequence)).toEqual([4, 5, 6]);
    // Over SSE: the same events, and the stream ends after run.completed.
    expect((await runEvents(t, key, runId)).map((e) => e.sequence)).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it('answers a run still executing with what is written so far and hands the rest over', async () => {
    const runId = await create('vendor.test.local-slow');
    const { value: opened, reads } = await openCounting(runId);
    expect(reads).toBe(0);
    expect(opened!.status).toBe('running');
    const after = opened!.events.length ? opened!.events[opened!.events.length - 1].sequence : 0;
    const rest = await events.poll({ tenant: 'default' }, runId, after, 5000, opened!.readAt);
    expect(rest[0].sequence).toBe(after + 1);
    await waitForStatus(t, key, runId, ['completed']);
    const all = await runEvents(t, key, runId);
    expect(all[all.length - 1].type).toBe('run.completed');
  });

  it('never answers another tenant or another workspace: the log is read, and it refuses them (404)', async () => {
    const runId = await create('vendor.test.local-two', ['completed']);
    expect(await events.openRun({ tenant: 'other' }, runId, 0)).toBeUndefined();
    expect(await events.openRun({ tenant: 'default', workspace: 'elsewhere' }, runId, 0)).toBeUndefined();
    const foreign = await t.key({ tenant: 'other', scopes: ['runs:read'] });
    expect((await t.http('GET', `/v1/runs/${runId}/events`, { token: foreign })).status).toBe(404);
  });

  it('a run that suspends is followed from the log: its gate is written in a transaction, not published', async () => {
    const runId = await create('vendor.test.local-gate', ['waiting-approval']);
    const { value: opened, reads } = await openCounting(runId);
    expect(reads).toBe(1);
    expect(opened!.status).toBe('waiting-approval');
    expect(opened!.events.map((e) => e.type)).toContain('node.suspended');
  });

  it('a write that did not come from the engine sends followers back to the log', async () => {
    const runId = await create('vendor.test.local-two', ['completed']);
    await events.append({ tenant: 'default' }, runId, 'run.annotated', { note: 'written past the engine' });
    const { value: opened, reads } = await openCounting(runId);
    expect(reads).toBe(1);
    expect(opened!.events.map((e) => e.type)).toEqual(['run.started', 'node.started', 'node.completed', 'node.started', 'node.completed', 'run.completed', 'run.annotated']);
  });
});
