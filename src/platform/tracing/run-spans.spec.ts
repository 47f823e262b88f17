import { MAX_RUNS, MAX_SPANS, MAX_SPANS_PER_RUN, RecordedSpan, RunSpanStore } from './run-spans';

const span = (name: string, spanId: string, parentSpanId: string | null, endedAt: string | null = null): RecordedSpan => ({
  name,
  traceId: 'a'.repeat(32),
  spanId,
  parentSpanId,
  kind: 'internal',
  startedAt: '2026-01-01T00:00:00.000Z',
  endedAt,
  status: { code: 'unset' },
  attributes: {},
});

describe('run span store', () => {
  it('keeps a run span, the spans under it (at any depth) and reads an open span again when asked', () => {
    const s = new RunSpanStore();
    let ended: string | null = null;
    s.started({ spanId: 'r1', parentSpanId: 'req', runId: 'run-1' }, () => span('openwop.run', 'r1', 'req', ended));
    s.started({ spanId: 'n1', parentSpanId: 'r1' }, () => span('openwop.node.core.noop', 'n1', 'r1'));
    s.started({ spanId: 't1', parentSpanId: 'n1' }, () => span('openwop.tool.call', 't1', 'n1'));
    s.started({ spanId: 'x', parentSpanId: 'req' }, () => span('GET /v1/runs', 'x', 'req'));
    expect(s.spans('run-1').spans.map((x) => x.name)).toEqual(['openwop.run', 'openwop.node.core.noop', 'openwop.tool.call']);
    expect(s.spans('run-1').spans[0].endedAt).toBeNull();
    ended = '2026-01-01T00:00:01.000Z';
    expect(s.spans('run-1').spans[0].endedAt).toBe(ended);
    expect(s.spans('run-2')).toEqual({ spans: [], dropped: 0 });
  });

  it('is bounded: MAX_SPANS_PER_RUN spans a run (the rest counted) and the last MAX_RUNS runs', () => {
    const s = new RunSpanStore();
    for (let i = 0; i < MAX_SPANS_PER_RUN + 5; i++) s.started({ spanId: `s${i}`, runId: 'big' }, () => span('openwop.run', `s${i}`, null));
    expect(s.spans('big').spans).toHaveLength(MAX_SPANS_PER_RUN);
    expect(s.spans('big').dropped).toBe(5);
    for (let i = 0; i < MAX_RUNS; i++) s.started({ spanId: `r${i}`, runId: `run-${i}` }, () => span('openwop.run', `r${i}`, null));
    expect(s.spans('big').spans).toHaveLength(0);
    expect(s.spans(`run-${MAX_RUNS - 1}`).spans).toHaveLength(1);
  });

  it('keeps MAX_SPANS spans in all: the oldest runs make room for a new one', () => {
    const s = new RunSpanStore();
    const per = MAX_SPANS_PER_RUN;
    const runs = Math.ceil(MAX_SPANS / per) + 1;
    for (let r = 0; r < runs; r++) for (let i = 0; i < per; i++) s.started({ spanId: `${r}-${i}`, runId: `run-${r}` }, () => span('x', `${r}-${i}`, null));
    const kept = Array.from({ length: runs }, (_, r) => s.spans(`run-${r}`).spans.length);
    expect(kept.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(MAX_SPANS);
    expect(kept[0]).toBe(0);
    expect(kept[runs - 1]).toBe(per);
  });
});
