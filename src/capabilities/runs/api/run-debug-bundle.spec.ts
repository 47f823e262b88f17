import { buildDebugBundle, maskValue, MASK } from './run-debug-bundle';
import type { RunSnapshot } from '../run-snapshot';

const snapshot = { runId: 'r1', workflowId: 'w', status: 'completed', inputs: { token: 'x' }, createdAt: '2026-01-01T00:00:00.000Z' } as unknown as RunSnapshot;
const event = (sequence: number, payload: Record<string, unknown>) => ({ eventId: `e${sequence}`, runId: 'r1', type: 'node.completed', payload, timestamp: '2026-01-01T00:00:00.000Z', sequence, nodeId: 'n1' });

describe('debug bundle masking and cap', () => {
  it('masks user data whatever its keys, keeps structure, and masks a credential-looking structural string', () => {
    const state = { applied: false };
    const out = maskValue({ status: 'completed', reason: 'x', outputs: { status: 'secret', n: 3, ok: true }, title: 'Deploy v1?', error: { code: 'boom', message: 'Bearer abcdefghijklmnop' } }, state);
    expect(out).toEqual({ status: 'completed', reason: 'x', outputs: { status: MASK, n: 3, ok: true }, title: MASK, error: { code: 'boom', message: MASK } });
    expect(state.applied).toBe(true);
  });

  it('reports no redaction when nothing was masked', () => {
    const b = buildDebugBundle({ runId: 'r1', workflowId: 'w', status: 'completed' } as unknown as RunSnapshot, [event(1, { status: 'completed' })], { name: 'h', version: '1' });
    expect([b.redactionApplied, b.redactionMode, b.metrics.eventCount, b.metrics.nodeCount]).toEqual([false, 'mask', 1, 1]);
  });

  it('cuts the log at the cap, at an event boundary, and says so', () => {
    const events = Array.from({ length: 50 }, (_, i) => event(i + 1, { status: 'completed', outputs: { s: 'y'.repeat(100) } }));
    const b = buildDebugBundle(snapshot, events, { name: 'h', version: '1' }, { maxBytes: 2000 });
    expect(b.events.length).toBeGreaterThan(0);
    expect(b.events.length).toBeLessThan(50);
    expect(b.metrics.eventCount).toBe(b.events.length);
    expect([b.truncated, b.truncatedReason]).toEqual([true, 'events_truncated_to_size_cap']);
  });
});

describe('debug bundle spans', () => {
  const run = { name: 'openwop.run', traceId: 'b'.repeat(32), spanId: 'c'.repeat(16), parentSpanId: 'd'.repeat(16), kind: 'internal' as const, startedAt: '2026-01-01T00:00:00.000Z', endedAt: '2026-01-01T00:00:01.000Z' };

  it('carries the recorded spans as they are, masking only strings that look like a credential', () => {
    const spans = [
      { ...run, status: { code: 'ok' as const }, attributes: { 'openwop.run_id': 'r1', 'openwop.node_attempt': 1 } },
      { ...run, name: 'openwop.tool.call', status: { code: 'error' as const, message: 'Bearer abcdefghijklmnopqrstuvwxyz' }, attributes: { 'server.address': 'ghp_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa' } },
    ];
    const b = buildDebugBundle({ runId: 'r1', workflowId: 'w', status: 'completed' } as unknown as RunSnapshot, [], { name: 'h', version: '1' }, { spans });
    expect(b.spans).toEqual([spans[0], { ...spans[1], status: { code: 'error', message: MASK }, attributes: { 'server.address': MASK } }]);
    expect(b.redactionApplied).toBe(true);
    expect(b.truncated).toBeUndefined();
  });

  it('says when spans were left out at the cap', () => {
    const b = buildDebugBundle({ runId: 'r1', workflowId: 'w', status: 'completed' } as unknown as RunSnapshot, [], { name: 'h', version: '1' }, { spans: [], spansDropped: 3 });
    expect([b.truncated, b.truncatedReason]).toEqual([true, 'spans_truncated_to_cap']);
  });
});
