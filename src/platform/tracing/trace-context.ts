import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * W3C Trace Context (https://www.w3.org/TR/trace-context/) as a request carried it: the `traceparent`
 * fields and the opaque `tracestate`. A transport that receives a trace context runs its handler
 * inside `withTraceContext`, so whatever the handler calls (a service, the run it starts) can read it
 * with `currentTraceContext()`. While tracing is on (./tracing.ts) the current context is the
 * innermost span of the host's own (the request's, the run's, a node's), so the same storage carries
 * the parent of every span and of every outbound `traceparent`; no OpenTelemetry context manager is
 * involved.
 */
export interface TraceContext {
  version: string;
  /** 32 lowercase hex digits, never all zero. */
  traceId: string;
  /** The caller's span id: 16 lowercase hex digits, never all zero. */
  parentId: string;
  /** trace-flags, two hex digits (01: sampled). */
  flags: string;
  sampled: boolean;
  /** The `tracestate` header as received (vendor entries; passed on untouched), when valid. */
  tracestate?: string;
}

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;
/** tracestate: at most 32 comma-separated `key=value` members of printable ASCII, 512 characters in all. */
const TRACESTATE_MEMBER = /^[a-z0-9][_0-9a-z\-*/@]{0,255}=[\x20-\x2b\x2d-\x3c\x3e-\x7e]{0,255}[\x21-\x2b\x2d-\x3c\x3e-\x7e]$/;

/**
 * Parses a `traceparent` value (and `tracestate`). An invalid traceparent yields undefined: the
 * specification says a receiver then ignores both headers and starts a new trace, never refuses the
 * request. Version ff is invalid; a future version is read by its first four fields.
 */
export function parseTraceContext(traceparent: string | undefined, tracestate?: string): TraceContext | undefined {
  if (typeof traceparent !== 'string') return undefined;
  const m = TRACEPARENT.exec(traceparent.trim());
  if (!m) return undefined;
  const [, version, traceId, parentId, flags, rest] = m;
  if (version === 'ff') return undefined;
  if (version === '00' && rest !== undefined) return undefined;
  if (/^0+$/.test(traceId) || /^0+$/.test(parentId)) return undefined;
  const ctx: TraceContext = { version, traceId, parentId, flags, sampled: (parseInt(flags, 16) & 1) === 1 };
  const state = typeof tracestate === 'string' ? tracestate.trim() : '';
  if (state && state.length <= 512) {
    const members = state.split(',').map((s) => s.trim()).filter(Boolean);
    if (members.length <= 32 && members.every((mbr) => TRACESTATE_MEMBER.test(mbr))) ctx.tracestate = members.join(',');
  }
  return ctx;
}

const storage = new AsyncLocalStorage<TraceContext | undefined>();

/** Runs `fn` with `ctx` as the current trace context (undefined: none, even inside another one). */
export function withTraceContext<T>(ctx: TraceContext | undefined, fn: () => T): T {
  // No context to set and none to hide: nothing to do. The storage is entered only when there is
  // one (a traceparent, tracing on): entering it turns on Node's async-context tracking for every
  // promise of the process from then on, a cost the host does not pay when nobody traces.
  if (ctx === undefined && storage.getStore() === undefined) return fn();
  return storage.run(ctx, fn);
}

/** The trace context of the request being handled, if it carried a valid one. */
export function currentTraceContext(): TraceContext | undefined {
  return storage.getStore();
}
