import { CoalescedSoon } from '../scheduler/coalesced-soon';
import { currentTraceContext, TraceContext, withTraceContext } from './trace-context';
import type { TracingConfig } from './tracing-config';
import { WiringFault } from '../errors/internal-fault';

/**
 * The host's spans, behind a facade that loads nothing of OpenTelemetry while tracing is off: with no
 * backend started, `startSpan` answers undefined and `inSpan` just runs its function, so the engine
 * and the transports call these unconditionally at the cost of one check.
 *
 * The current span travels as the W3C trace context of `trace-context.ts` (its AsyncLocalStorage):
 * inside `inSpan`, `currentTraceContext()` names the span as the parent, so a child span, an outbound
 * `traceparent` header or the trace context stored with a new run all point at it. A span is always
 * started from an explicit parent (a remote one from a header or a run row, or the current one), so
 * the OpenTelemetry context manager is not needed.
 */

export type SpanKind = 'internal' | 'server' | 'client' | 'producer' | 'consumer';
export type SpanAttributes = Record<string, string | number | boolean | string[] | undefined>;

export interface SpanHandle {
  /** This span as a trace context: the parent of what runs inside it. */
  readonly context: TraceContext;
  setAttributes(attributes: SpanAttributes): void;
  /** Marks the span failed (status ERROR) with a short message (never a secret or an input). */
  fail(message: string): void;
  end(): void;
}

export interface SpanOptions {
  kind?: SpanKind;
  attributes?: SpanAttributes;
  /** The parent: a trace context (remote or local), null for a new trace, undefined for the current one. */
  parent?: TraceContext | null;
}

/** What a started tracing SDK provides (src/platform/tracing/otel-sdk.ts). */
export interface TracingBackend {
  startSpan(name: string, kind: SpanKind, parent: TraceContext | undefined, attributes: SpanAttributes): SpanHandle;
  forceFlush(): Promise<void>;
  shutdown(): Promise<void>;
}

let backend: TracingBackend | undefined;
let started: TracingConfig | undefined;

/** Whether spans are recorded and exported in this process. */
export function tracingEnabled(): boolean {
  return backend !== undefined;
}

/** The configuration tracing was started with (undefined while off). */
export function tracingConfig(): TracingConfig | undefined {
  return started;
}

/**
 * Starts the OpenTelemetry SDK (loaded here, on first use) and exports spans as configured. Returns
 * a handle that flushes and stops it; undefined when tracing is off (nothing is loaded).
 */
export async function startTracing(cfg: TracingConfig, resource: { serviceVersion: string; instanceId: string }): Promise<{ forceFlush(): Promise<void>; shutdown(): Promise<void> } | undefined> {
  if (!cfg.enabled) return undefined;
  if (backend) throw new WiringFault('tracing is already started in this process');
  const { createOtelBackend } = await import('./otel-sdk');
  const b = createOtelBackend(cfg, resource);
  backend = b;
  started = cfg;
  return {
    forceFlush: () => b.forceFlush(),
    async shutdown() {
      early.cancel();
      if (backend === b) {
        backend = undefined;
        started = undefined;
      }
      await b.shutdown();
    },
  };
}

/** Exports the spans ended so far now, instead of at the next batch (a no-op while tracing is off). */
export async function flushTracing(): Promise<void> {
  await backend?.forceFlush();
}

/** One early export at most every second, 250 ms after the unit of work that asked for it. */
const early = new CoalescedSoon(() => void backend?.forceFlush().catch(() => undefined));

/**
 * Brings the next export forward after a unit of work (a run's execution) ends, so its trace is in
 * the backend about when its end is visible, not up to a batch delay (`OTEL_BSP_SCHEDULE_DELAY`,
 * 5 s by default) later. Coalesced: one export at most every second, however many
 * runs end; the batch processor's own schedule goes on. A failed export is the exporter's to report.
 * A no-op while tracing is off.
 */
export function exportSoon(): void {
  if (backend) early.request();
}

/** Starts a span (undefined while tracing is off). The caller ends it. */
export function startSpan(name: string, opts: SpanOptions = {}): SpanHandle | undefined {
  if (!backend) return undefined;
  const parent = opts.parent === undefined ? currentTraceContext() : (opts.parent ?? undefined);
  return backend.startSpan(name, opts.kind ?? 'internal', parent, opts.attributes ?? {});
}

/**
 * Runs `fn` inside a new span: the span is current while `fn` runs (and in everything it awaits), a
 * throw marks it failed, and it ends when `fn` settles. While tracing is off, `fn` runs as it is.
 */
export async function inSpan<T>(name: string, opts: SpanOptions, fn: (span: SpanHandle | undefined) => Promise<T>): Promise<T> {
  const span = startSpan(name, opts);
  if (!span) return fn(undefined);
  try {
    return await withTraceContext(span.context, () => fn(span));
  } catch (e) {
    span.fail((e as { code?: string }).code ?? (e as Error)?.name ?? 'error');
    throw e;
  } finally {
    span.end();
  }
}

/** A trace context as a `traceparent` header value (version 00). */
export function formatTraceparent(ctx: TraceContext): string {
  return `00-${ctx.traceId}-${ctx.parentId}-${ctx.flags}`;
}

/**
 * The W3C headers that carry the current trace context to an outbound call (a tool's MCP server or
 * HTTP API): `traceparent` (and `tracestate`). Empty outside any trace.
 */
export function traceHeaders(ctx: TraceContext | undefined = currentTraceContext()): Record<string, string> {
  if (!ctx) return {};
  return { traceparent: formatTraceparent(ctx), ...(ctx.tracestate ? { tracestate: ctx.tracestate } : {}) };
}

/** `init` with the current trace headers added (headers the caller set itself win). */
export function withTraceHeaders(init: RequestInit | undefined): RequestInit | undefined {
  const extra = traceHeaders();
  if (!Object.keys(extra).length) return init;
  const headers = new Headers(init?.headers);
  for (const [k, v] of Object.entries(extra)) if (!headers.has(k)) headers.set(k, v);
  return { ...init, headers };
}
