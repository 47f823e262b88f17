import { Injectable } from '@nestjs/common';
import { Advertiser, CapabilityAdvertiser } from '../discovery/capability-advertiser';
import { MetricsService } from '../metrics/metrics.service';
import { SPEC_METRIC_NAMES } from '../metrics/spec-metric-names';
import { tracingConfig } from './tracing';

/**
 * The `observability` block (observability.md, capabilities.schema.json), present only while this
 * host exports over OTLP, and saying what it exports:
 * - `otel.exportProtocols` (§"Export protocols"): `http/json` and `http/protobuf`, which every
 *   emitting host supports, plus `grpc` when traces or metrics are configured to go over gRPC, so a
 *   collector that picks gRPC from the advertisement finds them there;
 * - `otel.signals`: `traces` while spans are exported, `metrics` while metrics are pushed;
 * - `otel.propagation`: the W3C Trace Context it honours on requests and forwards on outbound calls;
 * - `metrics` (`supported`, `names`) while metrics are pushed: the spec-named metrics it emits.
 * Nothing while neither is on.
 */
@Injectable()
@Advertiser()
export class TracingAdvertiser implements CapabilityAdvertiser {
  constructor(private readonly metrics: MetricsService) {}

  advertise(): Record<string, unknown> | undefined {
    const traces = tracingConfig();
    const metrics = this.metrics.otlpExportConfig();
    if (!traces && !metrics) return undefined;
    const grpc = traces?.protocol === 'grpc' || metrics?.protocol === 'grpc';
    return {
      observability: {
        otel: {
          exportProtocols: grpc ? ['grpc', 'http/json', 'http/protobuf'] : ['http/json', 'http/protobuf'],
          signals: [...(traces ? ['traces'] : []), ...(metrics ? ['metrics'] : [])],
          propagation: ['tracecontext'],
        },
        ...(metrics ? { metrics: { supported: true, names: [...SPEC_METRIC_NAMES] } } : {}),
      },
    };
  }
}
