import { parseTraceContext, withTraceContext } from './trace-context';
import { formatTraceparent, inSpan, startSpan, traceHeaders, tracingEnabled, withTraceHeaders } from './tracing';

describe('tracing facade', () => {
  const ctx = parseTraceContext('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', 'rojo=00f067aa0ba902b7')!;

  it('records nothing while tracing is off: no span, the function runs as it is', async () => {
    expect(tracingEnabled()).toBe(false);
    expect(startSpan('x')).toBeUndefined();
    await expect(inSpan('x', {}, async (span) => span)).resolves.toBeUndefined();
    await expect(inSpan('x', {}, async () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
  });

  it('carries the current trace context on outbound requests, and nothing outside one', () => {
    expect(formatTraceparent(ctx)).toBe('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01');
    expect(traceHeaders()).toEqual({});
    expect(withTraceHeaders({ method: 'POST' })).toEqual({ method: 'POST' });
    withTraceContext(ctx, () => {
      expect(traceHeaders()).toEqual({ traceparent: formatTraceparent(ctx), tracestate: 'rojo=00f067aa0ba902b7' });
      const init = withTraceHeaders({ method: 'POST', headers: { authorization: 'Bearer x' } })!;
      const h = new Headers(init.headers);
      expect([init.method, h.get('authorization'), h.get('traceparent'), h.get('tracestate')]).toEqual(['POST', 'Bearer x', formatTraceparent(ctx), 'rojo=00f067aa0ba902b7']);
      // A header the caller set itself is left as it is.
      expect(new Headers(withTraceHeaders({ headers: { traceparent: 'mine' } })!.headers).get('traceparent')).toBe('mine');
      expect(new Headers(withTraceHeaders(undefined)!.headers).get('traceparent')).toBe(formatTraceparent(ctx));
    });
  });
});
