import { Injectable } from '@nestjs/common';
import { Advertiser, CapabilityAdvertiser } from '../../../platform/discovery/capability-advertiser';
import { SAFE_FETCH_LIMITS } from '../../../platform/http/safe-fetch';

/** RFC 0076 §B `httpClient.safeFetch`: node executors get `ctx.http.safeFetch` behind the host's SSRF guard (node-http.ts). */
@Injectable()
@Advertiser()
export class SafeFetchAdvertiser implements CapabilityAdvertiser {
  advertise(): Record<string, unknown> {
    return {
      httpClient: {
        supported: true,
        ssrfGuard: true,
        maxResponseBodyBytes: SAFE_FETCH_LIMITS.maxResponseBytes,
        requestTimeoutMs: SAFE_FETCH_LIMITS.timeoutMs,
        methods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'],
        safeFetch: { supported: true },
      },
    };
  }
}
