import { Injectable } from '@nestjs/common';
import { Advertiser, CapabilityAdvertiser } from '../../../platform/discovery/capability-advertiser';
import { SAFE_FETCH_LIMITS } from '../../../platform/http/safe-fetch';

/**
 * RFC 0076 §B `httpClient.safeFetch`: node executors get `ctx.http.safeFetch` behind the host's SSRF guard (node-http.ts);
 * RFC 0079 `httpClient.egressPolicy`: a credential it attaches is bound to its audiences, each decision an `egress.decided`.
 */
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
        // RFC 0079: a call's connection credential is attached only within its audiences (node-http.ts).
        egressPolicy: { supported: true, decisions: ['allowed', 'denied', 'downgraded'] },
      },
    };
  }
}
