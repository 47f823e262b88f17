import { ROOT_CONTEXT, SpanKind as OtelSpanKind, SpanStatusCode, trace, TraceFlags } from '@opentelemetry/api';
import { TraceState } from '@opentelemetry/core';
import { OTLPTraceExporter as GrpcExporter } from '@opentelemetry/exporter-trace-otlp-grpc';
import { OTLPTraceExporter as JsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtoExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, NodeTracerProvider, SpanExporter } from '@opentelemetry/sdk-trace-node';
import type { ReadableSpan, Span, SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';
import { RecordedSpan, RecordedSpanKind, RUN_ID_ATTRIBUTE, RunSpanStore, runSpanStore } from './run-spans';
import type { TraceContext } from './trace-context';
import type { SpanAttributes, SpanHandle, SpanKind, TracingBackend } from './tracing';
import type { TracingConfig } from './tracing-config';

/**
 * The OpenTelemetry SDK behind the tracing facade. Loaded only by `startTracing` (a dynamic import),
 * so a host with tracing off, and every CLI command, never loads it.
 */

const KINDS: Record<SpanKind, OtelSpanKind> = {
  internal: OtelSpanKind.INTERNAL,
  server: OtelSpanKind.SERVER,
  client: OtelSpanKind.CLIENT,
  producer: OtelSpanKind.PRODUCER,
  consumer: OtelSpanKind.CONSUMER,
};

function exporterFor(cfg: TracingConfig): SpanExporter {
  const url = cfg.url ? { url: cfg.url } : {};
  switch (cfg.protocol) {
    case 'grpc':
      return new GrpcExporter(url);
    case 'http/json':
      return new JsonExporter(url);
    default:
      return new ProtoExporter(url);
  }
}

function clean(attributes: SpanAttributes): Record<string, string | number | boolean | string[]> {
  const out: Record<string, string | number | boolean | string[]> = {};
  for (const [k, v] of Object.entries(attributes)) if (v !== undefined) out[k] = v;
  return out;
}

const KIND_NAMES: Record<number, RecordedSpanKind> = {
  [OtelSpanKind.INTERNAL]: 'internal',
  [OtelSpanKind.SERVER]: 'server',
  [OtelSpanKind.CLIENT]: 'client',
  [OtelSpanKind.PRODUCER]: 'producer',
  [OtelSpanKind.CONSUMER]: 'consumer',
};
const STATUS_NAMES: Record<number, RecordedSpan['status']['code']> = { [SpanStatusCode.UNSET]: 'unset', [SpanStatusCode.OK]: 'ok', [SpanStatusCode.ERROR]: 'error' };

function isoOf(t: [number, number]): string {
  return new Date(t[0] * 1000 + Math.floor(t[1] / 1e6)).toISOString();
}

/** A span as the debug bundle reads it, read again at each call (an open span has no end yet). */
export function recordedSpan(span: ReadableSpan): RecordedSpan {
  const sc = span.spanContext();
  const status = span.status;
  return {
    name: span.name,
    traceId: sc.traceId,
    spanId: sc.spanId,
    parentSpanId: span.parentSpanContext?.spanId ?? null,
    kind: KIND_NAMES[span.kind] ?? 'internal',
    startedAt: isoOf(span.startTime),
    endedAt: span.ended ? isoOf(span.endTime) : null,
    status: { code: STATUS_NAMES[status.code] ?? 'unset', ...(status.message ? { message: status.message } : {}) },
    attributes: { ...span.attributes },
  };
}

/** Records the spans of runs (./run-spans.ts) as they start; the exporter's processor exports them as before. */
export class RunSpanProcessor implements SpanProcessor {
  constructor(private readonly store: RunSpanStore) {}

  onStart(span: Span): void {
    const runId = span.attributes[RUN_ID_ATTRIBUTE];
    this.store.started({ spanId: span.spanContext().spanId, parentSpanId: span.parentSpanContext?.spanId, runId: typeof runId === 'string' ? runId : undefined }, () => recordedSpan(span));
  }

  onEnd(): void {}

  async forceFlush(): Promise<void> {}

  async shutdown(): Promise<void> {}
}

export function createOtelBackend(cfg: TracingConfig, res: { serviceVersion: string; instanceId: string }): TracingBackend {
  // OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME (envDetector), over the host's own.
  const resource = resourceFromAttributes({ [ATTR_SERVICE_NAME]: cfg.serviceName, [ATTR_SERVICE_VERSION]: res.serviceVersion, 'service.instance.id': res.instanceId }).merge(
    detectResources({ detectors: [envDetector] }),
  );
  // Sampling: parent-based, always on for a root (OTEL_TRACES_SAMPLER overrides); batching: OTEL_BSP_*.
  const provider = new NodeTracerProvider({ resource, spanProcessors: [new RunSpanProcessor(runSpanStore()), new BatchSpanProcessor(exporterFor(cfg))] });
  // Global, so a plugin using @opentelemetry/api exports through the same pipeline.
  const registered = trace.setGlobalTracerProvider(provider);
  const tracer = provider.getTracer('openwop-host', res.serviceVersion);

  return {
    startSpan(name: string, kind: SpanKind, parent: TraceContext | undefined, attributes: SpanAttributes): SpanHandle {
      const ctx = parent
        ? trace.setSpanContext(ROOT_CONTEXT, {
            traceId: parent.traceId,
            spanId: parent.parentId,
            traceFlags: parent.sampled ? TraceFlags.SAMPLED : TraceFlags.NONE,
            isRemote: true,
            ...(parent.tracestate ? { traceState: new TraceState(parent.tracestate) } : {}),
          })
        : ROOT_CONTEXT;
      const span = tracer.startSpan(name, { kind: KINDS[kind], attributes: clean(attributes) }, ctx);
      const sc = span.spanContext();
      const sampled = (sc.traceFlags & TraceFlags.SAMPLED) === TraceFlags.SAMPLED;
      const state = sc.traceState?.serialize();
      const context: TraceContext = { version: '00', traceId: sc.traceId, parentId: sc.spanId, flags: sampled ? '01' : '00', sampled, ...(state ? { tracestate: state } : {}) };
      return {
        context,
        setAttributes: (a) => void span.setAttributes(clean(a)),
        fail: (message) => void span.setStatus({ code: SpanStatusCode.ERROR, message }),
        end: () => span.end(),
      };
    },
    forceFlush: () => provider.forceFlush(),
    async shutdown() {
      await provider.shutdown();
      if (registered) trace.disable();
    },
  };
}
