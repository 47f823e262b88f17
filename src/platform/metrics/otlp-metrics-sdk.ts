import type { Attributes, Counter, Histogram, Meter } from '@opentelemetry/api';
import { OTLPExporterBase } from '@opentelemetry/otlp-exporter-base';
import { convertLegacyOtlpGrpcOptions, createOtlpGrpcExportDelegate } from '@opentelemetry/otlp-grpc-exporter-base';
import { JsonMetricsSerializer, MetricsExporterMetricsHelper, ProtobufMetricsSerializer } from '@opentelemetry/otlp-transformer';
import { detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import { MeterProvider, PeriodicExportingMetricReader, type PushMetricExporter, type ResourceMetrics } from '@opentelemetry/sdk-metrics';
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';
import type { Registry } from 'prom-client';
import type { OtlpMetricsConfig } from './otlp-metrics-config';
import type { AppendedEvent, OtlpMetricsBackend } from './otlp-metrics';

/**
 * The OpenTelemetry metrics SDK behind `startOtlpMetrics`: loaded by a dynamic import only when
 * metrics are pushed over OTLP. The exporter is the OTLP one of the OpenTelemetry packages (the
 * export delegates and serializers the trace exporters are built from), for the three transports.
 */

const RUN_DURATION_BUCKETS = [0.5, 1, 2.5, 5, 10, 30, 60, 300, 600, 1800, 3600];
const ACTIVITY_DURATION_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];
const TERMINAL: Record<string, string> = { 'run.completed': 'completed', 'run.failed': 'failed', 'run.cancelled': 'cancelled' };
const NODE_TERMINAL = new Set(['completed', 'failed', 'cancelled', 'skipped']);
/** How many runs (and tool calls) in flight on this replica are remembered for their attributes. */
const REMEMBERED = 10_000;

// The package's `node-http` entry point (an `exports` subpath, which this project's module resolution does not type).
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { convertLegacyHttpOptions, createOtlpHttpExportDelegate } = require('@opentelemetry/otlp-exporter-base/node-http') as typeof import('@opentelemetry/otlp-exporter-base/build/src/index-node-http');

class OtlpMetricExporter extends OTLPExporterBase<ResourceMetrics> implements PushMetricExporter {}

function exporterFor(cfg: OtlpMetricsConfig): PushMetricExporter {
  const base = { ...(cfg.url ? { url: cfg.url } : {}), timeoutMillis: cfg.timeoutMs };
  if (cfg.protocol === 'grpc') {
    return new OtlpMetricExporter(
      createOtlpGrpcExportDelegate(
        convertLegacyOtlpGrpcOptions(base, 'METRICS'),
        ProtobufMetricsSerializer,
        'otlp_grpc_metric_exporter',
        MetricsExporterMetricsHelper,
        undefined,
        'MetricsExportService',
        '/opentelemetry.proto.collector.metrics.v1.MetricsService/Export',
      ),
    );
  }
  const json = cfg.protocol === 'http/json';
  return new OtlpMetricExporter(
    createOtlpHttpExportDelegate(
      convertLegacyHttpOptions(base, 'METRICS', 'v1/metrics', { 'Content-Type': json ? 'application/json' : 'application/x-protobuf' }),
      json ? JsonMetricsSerializer : ProtobufMetricsSerializer,
      'otlp_http_metric_exporter',
      MetricsExporterMetricsHelper,
      undefined,
    ),
  );
}

/** A map that forgets its oldest entries past `REMEMBERED`. */
function remember<V>(m: Map<string, V>, k: string, v: V): void {
  m.set(k, v);
  if (m.size > REMEMBERED) m.delete(m.keys().next().value as string);
}

interface PromValue {
  value: number;
  labels: Record<string, string | number>;
}

export function createOtlpMetricsBackend(cfg: OtlpMetricsConfig, registry: Registry, res: { serviceVersion: string; instanceId: string }): OtlpMetricsBackend {
  const resource = resourceFromAttributes({ [ATTR_SERVICE_NAME]: cfg.serviceName, [ATTR_SERVICE_VERSION]: res.serviceVersion, 'service.instance.id': res.instanceId }).merge(
    detectResources({ detectors: [envDetector] }),
  );
  const reader = new PeriodicExportingMetricReader({ exporter: exporterFor(cfg), exportIntervalMillis: cfg.intervalMs, exportTimeoutMillis: Math.min(cfg.timeoutMs, cfg.intervalMs) });
  // Not registered globally: each host (two in one test process) pushes its own numbers.
  const provider = new MeterProvider({ resource, readers: [reader] });
  const meter = provider.getMeter('openwop-host', res.serviceVersion);
  const instruments = specInstruments(meter);
  bridgeRegistry(meter, registry);

  const workflows = new Map<string, string>();
  const toolSources = new Map<string, string>();
  return {
    events(entries: AppendedEvent[]): void {
      for (const e of entries) {
        if (e.eventId) continue;
        const p = e.payload ?? {};
        if (e.type === 'run.started' && typeof p.workflowId === 'string') {
          remember(workflows, e.streamId, p.workflowId);
        } else if (TERMINAL[e.type]) {
          const workflowId = workflows.get(e.streamId);
          workflows.delete(e.streamId);
          const attrs: Attributes = { 'openwop.run_status': TERMINAL[e.type], 'openwop.tenant_id': e.scope.tenant, ...(workflowId ? { 'openwop.workflow_id': workflowId } : {}) };
          instruments.runCompleted.add(1, attrs);
          if (typeof p.durationMs === 'number') instruments.runDuration.record(p.durationMs / 1000, attrs);
        } else if (e.type === 'agent.toolCalled' && typeof p.callId === 'string') {
          remember(toolSources, p.callId, typeof p.transport === 'string' ? p.transport : 'unknown');
        } else if (e.type === 'agent.toolReturned' && typeof p.callId === 'string' && p.inputRequired !== true) {
          const attrs: Attributes = {
            provider: toolSources.get(p.callId) ?? 'unknown',
            'openwop.run_status': p.status === 'ok' ? 'success' : 'error',
            ...(typeof p.toolName === 'string' ? { 'openwop.tool_id': p.toolName } : {}),
          };
          toolSources.delete(p.callId);
          instruments.activityInvocations.add(1, attrs);
          if (typeof p.durationMs === 'number') instruments.activityDuration.record(p.durationMs / 1000, attrs);
        }
      }
    },
    forceFlush: () => provider.forceFlush(),
    shutdown: () => provider.shutdown(),
  };

  function specInstruments(m: Meter): { runCompleted: Counter; runDuration: Histogram; activityInvocations: Counter; activityDuration: Histogram } {
    const active = m.createObservableUpDownCounter('openwop.run.active', { unit: '1', description: 'Workflow runs not yet finished (all tenants, counted in the database at collection).' });
    const depth = m.createObservableGauge('openwop.queue.depth', { unit: '{run}', description: 'Workflow runs waiting to be started (pending), all tenants.' });
    const backlog = m.createObservableGauge('openwop.run.backlog', { unit: '{run}', description: 'Workflow runs admitted and not yet done executing (pending or running), all tenants.' });
    const nodes = m.createObservableCounter('openwop.node.completed', { unit: '1', description: 'Node executions this replica finished, by node type and terminal status.' });
    m.addBatchObservableCallback(
      async (o) => {
        const runs = await promValues(registry, 'openwop_runs');
        if (runs) {
          const by = (s: string) => runs.filter((v) => v.labels.status === s).reduce((n, v) => n + v.value, 0);
          const all = { 'openwop.tenant_id': 'all' };
          o.observe(active, runs.reduce((n, v) => n + v.value, 0), all);
          o.observe(depth, by('pending'), all);
          o.observe(backlog, by('pending') + by('running'), all);
        }
        for (const v of (await promValues(registry, 'openwop_run_node_executions_total')) ?? []) {
          const status = String(v.labels.outcome);
          if (NODE_TERMINAL.has(status)) o.observe(nodes, v.value, { 'openwop.node_type': String(v.labels.type_id), 'openwop.run_status': status });
        }
      },
      [active, depth, backlog, nodes],
    );
    return {
      runCompleted: m.createCounter('openwop.run.completed', { unit: '1', description: 'Workflow runs that reached a terminal status, by status.' }),
      runDuration: m.createHistogram('openwop.run.duration', { unit: 's', description: 'Wall-clock duration of a run, from its start to its terminal status.', advice: { explicitBucketBoundaries: RUN_DURATION_BUCKETS } }),
      activityInvocations: m.createCounter('openwop.activity.invocations', { unit: '1', description: 'Tool calls made by runs (provider: the tool source), by outcome.' }),
      activityDuration: m.createHistogram('openwop.activity.duration', { unit: 's', description: 'Wall-clock duration of one tool call.', advice: { explicitBucketBoundaries: ACTIVITY_DURATION_BUCKETS } }),
    };
  }
}

async function promValues(registry: Registry, name: string): Promise<PromValue[] | undefined> {
  const metric = registry.getSingleMetric(name);
  if (!metric) return undefined;
  try {
    return (await metric.get()).values as PromValue[];
  } catch {
    return undefined;
  }
}

/**
 * The host's own counters and gauges (those of `GET /metrics`, under the same names and labels),
 * read from the Prometheus registry at each collection. Histograms stay on `GET /metrics`: their
 * buckets cannot be handed to an observable instrument.
 */
function bridgeRegistry(meter: Meter, registry: Registry): void {
  const bridged = registry.getMetricsAsArray().flatMap((metric) => {
    const { name, help, type } = metric as unknown as { name: string; help: string; type: string };
    if (type !== 'counter' && type !== 'gauge') return [];
    const instrument = type === 'counter' ? meter.createObservableCounter(name, { description: help }) : meter.createObservableGauge(name, { description: help });
    return [{ name, instrument }];
  });
  if (!bridged.length) return;
  meter.addBatchObservableCallback(
    async (o) => {
      for (const b of bridged) {
        for (const v of (await promValues(registry, b.name)) ?? []) o.observe(b.instrument, v.value, v.labels);
      }
    },
    bridged.map((b) => b.instrument),
  );
}
