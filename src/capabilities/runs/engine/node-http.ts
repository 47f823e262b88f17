import { Inject, Injectable, OnModuleInit } from '@nestjs/common';
import { NodeExecutionContext, NodeHttp, SafeFetchError, SafeFetchInit } from '@openwop-host/plugin-sdk';
import { HOST_CONFIG, HostConfig } from '../../../platform/config/host-config';
import type { Resolver } from '../../../platform/http/egress-guard';
import { SAFE_FETCH_LIMITS, safeFetch, SafeFetchOutcome, SafeFetchPolicy } from '../../../platform/http/safe-fetch';
import type { TenantScope } from '../../../platform/identity/principal';
import { ConnectionPacksService } from '../../connections';
import { NodeExecutorRegistry } from './node-executor-registry.service';

/**
 * `ctx.http` of node executors (RFC 0076 §B): `safeFetch` through the host's SSRF guard (platform/http/safe-fetch.ts)
 * under the webhook egress policy (OPENWOP_WEBHOOK_ALLOW_PRIVATE, OPENWOP_WEBHOOK_ALLOWED_PORTS: one guard for every
 * outbound call the host makes or mediates), the host's time, size and redirect ceilings, and, when the call names a
 * connection provider, that provider's `apiHosts` as an allow-list (the check credentials are sent under).
 */
@Injectable()
export class NodeHttpBinder implements OnModuleInit {
  constructor(
    @Inject(HOST_CONFIG) private readonly config: HostConfig,
    private readonly packs: ConnectionPacksService,
    private readonly executors: NodeExecutorRegistry,
  ) {}

  onModuleInit(): void {
    this.executors.useHttp(this);
  }

  /** The guard policy a call of `scope` runs under (`resolver` replaces DNS: tests and the rebinding seam). */
  policy(scope: TenantScope, init: SafeFetchInit | undefined, resolver?: Resolver): SafeFetchPolicy {
    const w = this.config.webhooks;
    const provider = init?.connection;
    return {
      allowPrivate: w.allowPrivate,
      allowedPorts: w.allowedPorts,
      ...SAFE_FETCH_LIMITS,
      ...(resolver ? { resolver } : {}),
      ...(provider ? { hostAllowed: async (host: string) => (await this.packs.egressCheck(scope, provider, host)).allowed === true } : {}),
    };
  }

  fetch(scope: TenantScope, url: string, init?: SafeFetchInit, resolver?: Resolver): Promise<SafeFetchOutcome> {
    return safeFetch(url, init, this.policy(scope, init, resolver));
  }

  /** The `ctx.http` of one node execution: a refusal throws SafeFetchError (the node fails `safe_fetch_<refusal>` unless it catches it). */
  forNode(ctx: Pick<NodeExecutionContext, 'principal'>): NodeHttp {
    return {
      safeFetch: async (url, init) => {
        const o = await this.fetch(ctx.principal, url, init);
        if (!o.ok) throw new SafeFetchError(o.refusal, o.reason);
        return o.response;
      },
    };
  }
}
