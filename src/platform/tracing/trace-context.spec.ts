import { currentTraceContext, parseTraceContext, withTraceContext } from './trace-context';

describe('W3C trace context', () => {
  const id = '4bf92f3577b34da6a3ce929d0e0e4736';
  const parent = '00f067aa0ba902b7';

  it('reads a version-00 traceparent and a valid tracestate', () => {
    expect(parseTraceContext(`00-${id}-${parent}-01`, 'rojo=00f067aa0ba902b7, congo=t61rcWkgMzE')).toEqual({
      version: '00',
      traceId: id,
      parentId: parent,
      flags: '01',
      sampled: true,
      tracestate: 'rojo=00f067aa0ba902b7,congo=t61rcWkgMzE',
    });
    expect(parseTraceContext(`00-${id}-${parent}-00`)?.sampled).toBe(false);
  });

  it('ignores what the specification says to ignore', () => {
    for (const bad of [
      undefined,
      '',
      'garbage',
      `00-${id.toUpperCase()}-${parent}-01`,
      `00-${'0'.repeat(32)}-${parent}-01`,
      `00-${id}-${'0'.repeat(16)}-01`,
      `ff-${id}-${parent}-01`,
      `00-${id}-${parent}-01-extra`,
      `00-${id}-${parent}`,
    ]) {
      expect([bad, parseTraceContext(bad)]).toEqual([bad, undefined]);
    }
    // A later version may append fields; its first four are read.
    expect(parseTraceContext(`01-${id}-${parent}-01-more`)?.traceId).toBe(id);
    // An invalid tracestate is dropped, the traceparent kept.
    expect(parseTraceContext(`00-${id}-${parent}-01`, 'Not Valid')).toEqual(expect.not.objectContaining({ tracestate: expect.anything() }));
  });

  it('is current inside withTraceContext, across awaits, and only there', async () => {
    const ctx = parseTraceContext(`00-${id}-${parent}-01`);
    expect(currentTraceContext()).toBeUndefined();
    await withTraceContext(ctx, async () => {
      await new Promise((r) => setTimeout(r, 1));
      expect(currentTraceContext()).toBe(ctx);
      withTraceContext(undefined, () => expect(currentTraceContext()).toBeUndefined());
    });
    expect(currentTraceContext()).toBeUndefined();
  });
});
