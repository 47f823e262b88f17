import { Injectable } from '@nestjs/common';
import { Advertiser, CapabilityAdvertiser } from '../../platform/discovery/capability-advertiser';
import { GrpcListener } from './grpc-listener';

/**
 * `supportedTransports: ["rest", "grpc"]` and the `grpc {supported, endpoint, service, tls}` block
 * (grpc-transport.md §"Capability advertisement"), only while the gRPC listener is live: a host
 * started without it, or one that is shutting down, advertises no gRPC transport.
 */
@Injectable()
@Advertiser()
export class GrpcAdvertiser implements CapabilityAdvertiser {
  constructor(private readonly listener: GrpcListener) {}

  advertise(): Record<string, unknown> | undefined {
    const grpc = this.listener.advertisement();
    return grpc ? { supportedTransports: ['rest', 'grpc'], grpc } : undefined;
  }
}
