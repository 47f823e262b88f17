import type { RunEventView } from './event-log.service';
import { LocalTails } from './local-tails';

const scope = { tenant: 't1', workspace: null };
const view = (sequence: number, type = 'node.started'): RunEventView => ({ eventId: `e${sequence}`, runId: 'r', type, payload: {}, timestamp: new Date(0).toISOString(), sequence });
const part = (...seqs: number[]) => jest.fn(() => seqs.map((s) => view(s)));

describe('LocalTails', () => {
  it('answers a stream opened empty with what its writer published, in order, after the asked sequence', () => {
    const tails = new LocalTails();
    tails.open(scope, 'r');
    expect(tails.read({ tenant: 't1' }, 'r', 0, 1000, 'running')).toEqual({ status: 'running', events: [] });
    tails.written('r', part(1, 2), 2);
    tails.written('r', part(3), 1);
    expect(tails.read({ tenant: 't1' }, 'r', 0, 1000, 'running')!.events.map((e) => e.sequence)).toEqual([1, 2, 3]);
    expect(tails.read({ tenant: 't1' }, 'r', 2, 1000, 'running')!.events.map((e) => e.sequence)).toEqual([3]);
    expect(tails.read({ tenant: 't1' }, 'r', 0, 2, 'running')!.events.map((e) => e.sequence)).toEqual([1, 2]);
  });

  it('builds the events only when a follower asks, and once', () => {
    const tails = new LocalTails();
    tails.open(scope, 'r');
    const p = part(1);
    tails.written('r', p, 1);
    expect(p).not.toHaveBeenCalled();
    tails.read({ tenant: 't1' }, 'r', 0, 1000, 'running');
    tails.read({ tenant: 't1' }, 'r', 0, 1000, 'running');
    expect(p).toHaveBeenCalledTimes(1);
  });

  it('never answers another tenant or another workspace (the log is read, which refuses them)', () => {
    const tails = new LocalTails();
    tails.open({ tenant: 't1', workspace: 'w1' }, 'r');
    tails.written('r', part(1), 1);
    expect(tails.read({ tenant: 't2' }, 'r', 0, 1000, 'running')).toBeUndefined();
    expect(tails.read({ tenant: 't1', workspace: 'w2' }, 'r', 0, 1000, 'running')).toBeUndefined();
    expect(tails.read({ tenant: 't1', workspace: 'w1' }, 'r', 0, 1000, 'running')!.events).toHaveLength(1);
    // A caller without a workspace sees every workspace of its tenant, as the log's read does.
    expect(tails.read({ tenant: 't1' }, 'r', 0, 1000, 'running')!.events).toHaveLength(1);
  });

  it('drops a stream whose sequences show a write that did not come through it', () => {
    const tails = new LocalTails();
    tails.open(scope, 'r');
    tails.written('r', part(1, 2), 2);
    // Sequence 3 was written elsewhere (a lease that had lapsed): the writer's next write starts at 4.
    tails.written('r', part(4), 1);
    expect(tails.read({ tenant: 't1' }, 'r', 0, 1000, 'running')).toBeUndefined();
    tails.written('r', part(5), 1);
    expect(tails.read({ tenant: 't1' }, 'r', 0, 1000, 'running')).toBeUndefined();
  });

  it('drops a stream written past its writer, one the writer left without a final status, and a tenant\'s on purge', () => {
    const tails = new LocalTails();
    for (const id of ['a', 'b', 'c']) {
      tails.open(scope, id);
      tails.written(id, part(1), 1);
    }
    tails.forget('a');
    tails.close('b');
    expect(tails.read({ tenant: 't1' }, 'a', 0, 1000, 'running')).toBeUndefined();
    expect(tails.read({ tenant: 't1' }, 'b', 0, 1000, 'running')).toBeUndefined();
    tails.forgetTenant('t1');
    expect(tails.read({ tenant: 't1' }, 'c', 0, 1000, 'running')).toBeUndefined();
  });

  it('keeps a stream closed with its final status for a while, then drops it; nothing is added after the close', () => {
    let now = 1_000_000;
    const clock = jest.spyOn(Date, 'now').mockImplementation(() => now);
    try {
      const tails = new LocalTails({ streams: 10, events: 100, keepClosedMs: 1000 });
      tails.open(scope, 'r');
      tails.written('r', part(1, 2), 2);
      tails.close('r', 'completed');
      // Closing again without a status (the execution ending) keeps it.
      tails.close('r');
      expect(tails.read({ tenant: 't1' }, 'r', 0, 1000, 'running')).toEqual({ status: 'completed', events: [view(1), view(2)] });
      now += 1001;
      expect(tails.read({ tenant: 't1' }, 'r', 0, 1000, 'running')).toBeUndefined();
      tails.open(scope, 's');
      tails.close('s', 'failed');
      tails.written('s', part(1), 1);
      expect(tails.read({ tenant: 't1' }, 's', 0, 1000, 'running')).toBeUndefined();
    } finally {
      clock.mockRestore();
    }
  });

  it('holds at most its number of streams (the oldest go first) and a stream of at most its number of events', () => {
    const tails = new LocalTails({ streams: 3, events: 4, keepClosedMs: 60_000 });
    for (const id of ['a', 'b', 'c', 'd']) tails.open(scope, id);
    expect(tails.read({ tenant: 't1' }, 'a', 0, 1000, 'running')).toBeUndefined();
    for (const id of ['b', 'c', 'd']) expect(tails.read({ tenant: 't1' }, id, 0, 1000, 'running')).toBeDefined();
    tails.written('b', part(1, 2, 3), 3);
    tails.written('b', part(4, 5), 2);
    expect(tails.read({ tenant: 't1' }, 'b', 0, 1000, 'running')).toBeUndefined();
  });
});
