import { Injectable } from '@nestjs/common';
import type { Counter, Gauge, Histogram } from 'prom-client';
import { LATENCY_BUCKETS, MetricsService } from '../../platform/metrics/metrics.service';
import { grpcStatusName } from './grpc-status';

/** The status code's name as gRPC tooling prints it (OK, NOT_FOUND, ...), a bounded label set. */
export function grpcCodeName(code: number): string {
  return grpcStatusName(code) ?? 'UNKNOWN';
}

/**
 * Per-method gRPC metrics beside the HTTP ones in `GET /metrics`: calls by method and status code,
 * their duration (a stream's lasts until it closes), the calls in flight and the stream messages sent.
 * `method` is the Engine method name (17 values), never anything the caller chose.
 */
@Injectable()
export class GrpcMetrics {
  private readonly calls: Counter<'method' | 'code'>;
  private readonly duration: Histogram<'method' | 'code'>;
  private readonly inFlight: Gauge<'method'>;
  private readonly messages: Counter<'method'>;

  constructor(metrics: MetricsService) {
    this.calls = metrics.counter({
      name: 'openwop_grpc_requests_total',
      help: 'gRPC calls answered, by Engine method and status code.',
      labelNames: ['method', 'code'],
    });
    this.duration = metrics.histogram({
      name: 'openwop_grpc_request_duration_seconds',
      help: 'Time from a gRPC call to its status, by Engine method and status code (a stream lasts until it closes).',
      labelNames: ['method', 'code'],
      buckets: LATENCY_BUCKETS,
    });
    this.inFlight = metrics.gauge({
      name: 'openwop_grpc_requests_in_flight',
      help: 'gRPC calls being handled now (open event streams included), by Engine method.',
      labelNames: ['method'],
    });
    this.messages = metrics.counter({
      name: 'openwop_grpc_stream_messages_sent_total',
      help: 'Messages written on gRPC server streams, by Engine method.',
      labelNames: ['method'],
    });
  }

  started(method: string): void {
    this.inFlight.inc({ method });
  }

  finished(method: string, code: number, seconds: number): void {
    const labels = { method, code: grpcCodeName(code) };
    this.inFlight.dec({ method });
    this.calls.inc(labels);
    this.duration.observe(labels, seconds);
  }

  sent(method: string): void {
    this.messages.inc({ method });
  }
}
