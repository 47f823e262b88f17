import type { EventQuery, RunEventView } from '../../../platform/events/event-log.service';
import type { ClaimedRow } from '../engine/run-store';
import { ReplayLog, ReplaySource } from './run-replay';

/** A log of runs by id: each event `[type, nodeId, payload]`, numbered from 1; read filters by type and cursor, like the event log. */
function logOf(runs: Record<string, Array<[string, string, Record<string, unknown>]>>): ReplayLog & { reads: string[] } {
  const reads: string[] = [];
  return {
    reads,
    async read(scope, streamId, q: EventQuery = {}) {
      reads.push(`${scope.tenant}:${streamId}`);
      const events: RunEventView[] = (runs[streamId] ?? []).map(([type, nodeId, payload], i) => ({ eventId: `e${i}`, runId: streamId, type, nodeId, payload: { nodeId, ...payload }, timestamp: '', sequence: i + 1 }));
      return events.filter((e) => (!q.type || e.type === q.type) && e.sequence > (q.afterSequence ?? 0)).slice(0, q.limit ?? 1000);
    },
  };
}

const forkRow = (sourceRunId: string): ClaimedRow => ({ id: 'fork', tenant: 'acme', workspace: null, metadata: { fork: { mode: 'replay', sourceRunId } } }) as unknown as ClaimedRow;

describe('ReplaySource: outcomes keyed on the execution ordinal (replay.md §Suppression rule 2)', () => {
  it('is only the source of a replay fork', () => {
    expect(ReplaySource.of({ id: 'r', tenant: 'acme', metadata: {} } as unknown as ClaimedRow, logOf({}))).toBeUndefined();
    expect(ReplaySource.of({ id: 'r', tenant: 'acme', metadata: { fork: { mode: 'branch', sourceRunId: 's' } } } as unknown as ClaimedRow, logOf({}))).toBeUndefined();
  });

  it('resolves each execution of a looped node from the same execution of the source, and fails the one the source never finished closed', async () => {
    // The source: effect ran once (completed), the run was cancelled before its second execution.
    const log = logOf({ src: [['node.started', 'effect', {}], ['node.completed', 'effect', { outputs: { n: 1 } }], ['node.started', 'wait', {}], ['node.completed', 'wait', { outputs: {} }]], fork: [] });
    const replay = ReplaySource.of(forkRow('src'), log)!;
    await expect(replay.outputs('effect', 'recorded')).resolves.toEqual({ n: 1 });
    await expect(replay.outputs('effect', 'recorded')).rejects.toMatchObject({ code: 'replay_source_missing' });
    // Read under the fork's tenant.
    expect(new Set(log.reads)).toEqual(new Set(['acme:src', 'acme:fork']));
  });

  it('counts the executions the fork already logged (its inherited prefix, an earlier claim), and replays a recorded failure as it failed', async () => {
    const log = logOf({
      src: [['node.completed', 'effect', { outputs: { n: 1 } }], ['node.failed', 'effect', { error: { code: 'upstream_down', message: 'no' } }], ['node.completed', 'effect', { outputs: { n: 3 } }]],
      fork: [['node.completed', 'effect', { outputs: { n: 1 } }]],
    });
    const replay = ReplaySource.of(forkRow('src'), log)!;
    await expect(replay.outputs('effect', 'recorded')).rejects.toMatchObject({ code: 'upstream_down' });
    await expect(replay.outputs('effect', 'recorded')).resolves.toEqual({ n: 3 });
    await expect(replay.outputs('other', 'recorded')).rejects.toMatchObject({ code: 'replay_source_missing' });
  });
});
