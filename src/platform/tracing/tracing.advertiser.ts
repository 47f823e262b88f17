import { Injectable } from '@nestjs/common';
import { Advertiser, CapabilityAdvertiser } from '../discovery/capability-advertiser';
import { tracingConfig } from './tracing';

/**
 * `observability.otel.exportProtocols` while this host exports traces (observability.md §"Export
 * protocols"): `http/json` and `http/protobuf`, which every emitting host supports, plus `grpc` when
 * the host is configured to export over gRPC, so a collector that picks gRPC from the advertisement
 * finds spans there. Nothing is advertised while tracing is off.
 */
@Injectable()
@Advertiser()
export class TracingAdvertiser implements CapabilityAdvertiser {
  advertise(): Record<string, unknown> | undefined {
    const cfg = tracingConfig();
    if (!cfg) return undefined;
    return { observability: { otel: { exportProtocols: cfg.protocol === 'grpc' ? ['grpc', 'http/json', 'http/protobuf'] : ['http/json', 'http/protobuf'] } } };
  }
}
