/**
 * A follower waiting on a run this replica executes is handed the events the engine wrote, once
 * committed, without reading them back: exactly what a read of the log answers, in order, only what
 * follows on from what the follower has, and never to a caller who may not see the run.
 */
import { DatabaseNotifications } from '../../src/platform/database/database-notifications';
import { EventLogService, OpenedRun } from '../../src/platform/events/event-log.service';
import { createTestApp, TestApp } from '../support/test-app';
import { installChains, runEvents, waitForStatus } from './run-kit';

describe('runs: events handed to local followers', () => {
  let t: TestApp;
  let key: string;

  beforeAll(async () => {
    t = await createTestApp();
    key = await t.key({ scopes: ['runs:create', 'runs:read'] });
    // The listener's coming up wakes every waiter once (what was notified before it was not heard):
    // counted reads start after it. The embedded engine has no listener.
    const notifications = t.app.get(DatabaseNotifications);
    for (const until = Date.now() + 5000; process.env.OPENWOP_TEST_DB_MODE !== 'embedded' && !notifications.live && Date.now() < until; ) await new Promise((r) => setTimeout(r, 20));
    await installChains(t, 'default', 'vendor.test.published', {
      'vendor.test.later': {
        nodes: [
          // Shorter than a poller's wait between two checks (500 ms), with room for a loaded machine's late timer
          // and write (400 ms left too little once): the events it waits for are handed over, not read.
          { id: 'wait', typeId: 'core.delay', config: { ms: 300 } },
          { id: 'done', typeId: 'core.noop', config: { note: 'a "quoted" value', n: 1.5, list: [3, 1, 2], nested: { z: 1, a: [] } } },
        ],
        edges: [{ from: 'wait', to: 'done' }],
      },
    });
  });

  afterAll(async () => {
    await t?.close();
  });

  /**
   * Starts a run of vendor.test.later and opens a follower of it once its first write (run.started,
   * node.started) is in, opened again while the run waits in its delay: a read that overlapped that
   * write's publication is (rightly) not taken as current.
   */
  async function openMidRun(events: EventLogService): Promise<{ runId: string; opened: OpenedRun }> {
    const created = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.test.later' } });
    const runId = created.body.runId as string;
    let opened = await events.openRun({ tenant: 'default' }, runId, 0);
    for (let i = 0; (opened?.events.length ?? 0) < 2 && i < 100; i++) {
      await new Promise((r) => setTimeout(r, 20));
      opened = await events.openRun({ tenant: 'default' }, runId, 0);
    }
    opened = await events.openRun({ tenant: 'default' }, runId, 0);
    expect(opened!.status).toBe('running');
    expect(opened!.events).toHaveLength(2);
    return { runId, opened: opened! };
  }

  it('hands the written events to a waiting poller, equal to what the log answers, without a read', async () => {
    const events = t.app.get(EventLogService);
    const created = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.test.later' } });
    expect(created.status).toBe(201);
    const runId = created.body.runId as string;
    // Wait for the first write (run.started, node.started), then follow from its last sequence.
    let first = await runEvents(t, key, runId);
    for (let i = 0; first.length < 2 && i < 100; i++) {
      await new Promise((r) => setTimeout(r, 20));
      first = await runEvents(t, key, runId);
    }
    const after = first[first.length - 1].sequence;
    const read = jest.spyOn(events, 'read');
    const handed = await events.poll({ tenant: 'default' }, runId, after, 5000);
    // One read when the poll started (nothing yet), none when the events came.
    expect(read).toHaveBeenCalledTimes(1);
    read.mockRestore();
    expect(handed.length).toBeGreaterThan(0);
    expect(handed[0].sequence).toBe(after + 1);
    expect(handed.map((e) => e.sequence)).toEqual(handed.map((_, i) => after + 1 + i));
    const fromLog = await events.read({ tenant: 'default' }, runId, { afterSequence: after, limit: handed.length });
    expect(JSON.parse(JSON.stringify(handed))).toEqual(JSON.parse(JSON.stringify(fromLog)));
    await waitForStatus(t, key, runId, ['completed']);
  });

  it('a follower opened mid-run takes its opening read as the poll\'s own: the rest is handed over with no read', async () => {
    const events = t.app.get(EventLogService);
    const { runId, opened } = await openMidRun(events);
    const after = opened.events[opened.events.length - 1].sequence;
    const read = jest.spyOn(events, 'read');
    const handed = await events.poll({ tenant: 'default' }, runId, after, 5000, opened.readAt);
    expect(read).not.toHaveBeenCalled();
    read.mockRestore();
    expect(handed[0].sequence).toBe(after + 1);
    await waitForStatus(t, key, runId, ['completed']);
  });

  it('an append after the opening read is not missed: the poll reads when the log moved since', async () => {
    const events = t.app.get(EventLogService);
    const { runId, opened } = await openMidRun(events);
    // Another write of this replica commits after the opening read (any stream moves the counter).
    events.publish({ tenant: 'default', workspace: null }, 'another-stream', () => [], 0);
    const after = opened.events[opened.events.length - 1].sequence;
    const read = jest.spyOn(events, 'read');
    const handed = await events.poll({ tenant: 'default' }, runId, after, 5000, opened.readAt);
    expect(read).toHaveBeenCalled();
    read.mockRestore();
    expect(handed[0].sequence).toBe(after + 1);
    await waitForStatus(t, key, runId, ['completed']);
  });

  it('never hands them to a caller of another tenant or workspace', async () => {
    const events = t.app.get(EventLogService);
    const created = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.test.later' } });
    const runId = created.body.runId as string;
    const [otherTenant, otherWorkspace] = await Promise.all([events.poll({ tenant: 'someone-else' }, runId, 0, 1500), events.poll({ tenant: 'default', workspace: 'ws-other' }, runId, 0, 1500)]);
    expect(otherTenant).toEqual([]);
    expect(otherWorkspace).toEqual([]);
    await waitForStatus(t, key, runId, ['completed']);
  });
});
