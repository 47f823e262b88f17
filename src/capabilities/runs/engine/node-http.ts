import { Inject, Injectable, OnModuleInit } from '@nestjs/common';
import { NodeExecutionContext, NodeHttp, SafeFetchError, SafeFetchInit } from '@openwop-host/plugin-sdk';
import { HOST_CONFIG, HostConfig } from '../../../platform/config/host-config';
import type { Resolver } from '../../../platform/http/egress-guard';
import { HopCredential, SAFE_FETCH_LIMITS, safeFetch, SafeFetchOutcome, SafeFetchPolicy } from '../../../platform/http/safe-fetch';
import type { TenantScope } from '../../../platform/identity/principal';
import { ConnectionPacksService, CredentialedEgressService } from '../../connections';
import type { EgressDecided } from '../../connections';
import { NodeExecutorRegistry } from './node-executor-registry.service';

/** Told of every RFC 0079 egress decision a call makes (a node emits it as `egress.decided`). */
export type EgressDecisionSink = (d: EgressDecided) => Promise<void>;

/** A header a credential may go in: a token of letters, digits and dashes, not one the host sets itself. */
const CREDENTIAL_HEADER = /^[A-Za-z0-9][A-Za-z0-9-]{0,63}$/;
const NOT_FOR_CREDENTIALS = new Set(['host', 'cookie', 'content-length', 'transfer-encoding', 'connection', 'upgrade']);

/**
 * `ctx.http` of node executors (RFC 0076 §B): `safeFetch` through the host's SSRF guard (platform/http/safe-fetch.ts)
 * under the webhook egress policy (OPENWOP_WEBHOOK_ALLOW_PRIVATE, OPENWOP_WEBHOOK_ALLOWED_PORTS: one guard for every
 * outbound call the host makes or mediates), the host's time, size and redirect ceilings, and, when the call names a
 * connection provider, that provider's `apiHosts` as an allow-list (the check credentials are sent under).
 *
 * A call naming a `credential` (a connection of the tenant) gets it attached by the host under RFC 0079: for each
 * hop the connections capability decides from the credential's provenance (its audiences: the provider's apiHosts)
 * whether it is attached (allowed), left off (downgraded, when the call asks for `credentialFallback: anonymous`)
 * or the call refused (denied; also when the provenance cannot be evaluated). Each decision is audited and told to
 * the caller's sink; a node emits it as the content-free `egress.decided` event of its run.
 */
@Injectable()
export class NodeHttpBinder implements OnModuleInit {
  constructor(
    @Inject(HOST_CONFIG) private readonly config: HostConfig,
    private readonly packs: ConnectionPacksService,
    private readonly executors: NodeExecutorRegistry,
    private readonly egress: CredentialedEgressService,
  ) {}

  onModuleInit(): void {
    this.executors.useHttp(this);
  }

  /** The guard policy a call of `scope` runs under (`resolver` replaces DNS: tests and the rebinding seam). */
  policy(scope: TenantScope, init: SafeFetchInit | undefined, resolver?: Resolver, credential?: HopCredential): SafeFetchPolicy {
    const w = this.config.webhooks;
    const provider = init?.connection;
    return {
      allowPrivate: w.allowPrivate,
      allowedPorts: w.allowedPorts,
      ...SAFE_FETCH_LIMITS,
      ...(resolver ? { resolver } : {}),
      ...(provider ? { hostAllowed: async (host: string) => (await this.packs.egressCheck(scope, provider, host)).allowed === true } : {}),
      ...(credential ? { credential } : {}),
    };
  }

  async fetch(scope: TenantScope & { principal?: string }, url: string, init?: SafeFetchInit, resolver?: Resolver, sink?: EgressDecisionSink, runId?: string): Promise<SafeFetchOutcome> {
    const credential = init?.credential === undefined ? undefined : await this.hopCredential(scope, init, sink, runId);
    if (credential && 'refused' in credential) return { ok: false, refusal: 'audience', reason: credential.refused };
    return safeFetch(url, init, this.policy(scope, init, resolver, credential));
  }

  /** The per-hop credential of a call naming `init.credential` (RFC 0079), or why the call is refused up front. */
  private async hopCredential(scope: TenantScope & { principal?: string }, init: SafeFetchInit, sink: EgressDecisionSink | undefined, runId: string | undefined): Promise<HopCredential | { refused: string }> {
    const ref = init.credential;
    const named = init.credentialHeader ?? 'authorization';
    if (typeof ref !== 'string' || ref.length === 0 || ref.length > 200) return { refused: 'credential must name a connection (its name or id)' };
    if (typeof named !== 'string' || !CREDENTIAL_HEADER.test(named) || NOT_FOR_CREDENTIALS.has(named.toLowerCase())) return { refused: 'credentialHeader must be a header name (letters, digits, dashes) the host does not set itself' };
    const header = named.toLowerCase();
    const fallback = init.credentialFallback === 'anonymous' ? 'anonymous' : 'deny';
    const c = await this.egress.credential(scope, ref);
    const note = async (d: EgressDecided) => {
      await this.egress.record(scope, c, d, runId);
      await sink?.(d);
    };
    let pending: EgressDecided | undefined;
    let attached: EgressDecided | undefined;
    return {
      check: async (host) => {
        const d = this.egress.decide(c, host, fallback);
        // An allowed hop is recorded once the guard passed it (else it is recorded as ssrf-blocked).
        if (d.decision === 'allowed') {
          pending = d;
          return { attach: true };
        }
        await note(d);
        if (d.decision === 'downgraded') return { attach: false };
        return { refused: d.reason === 'provenance-unevaluable' ? 'the credential cannot be bound to a destination (unknown connection, no credential bound, or a provider without apiHosts)' : `the credential may not be sent to "${host}"` };
      },
      attach: async (host) => {
        const d = pending && pending.destination === host ? pending : this.egress.decide(c, host, fallback);
        pending = undefined;
        await note(d);
        attached = d;
        return this.egress.withCredential(scope, c, d, async (secret) => ({ [header]: header === 'authorization' ? `Bearer ${secret}` : secret }));
      },
      // Two-key overlap (RFC 0046 §D): a hop refused with the credential goes once more with the one its rotation replaced.
      rejected: async (host) => {
        if (!attached || attached.destination !== host) return undefined;
        return this.egress.withReplacedCredential(scope, c, attached, async (secret) => ({ [header]: header === 'authorization' ? `Bearer ${secret}` : secret }));
      },
      guardRefused: async (host) => {
        pending = undefined;
        await note(this.egress.guardRefused(c, host));
      },
    };
  }

  /** The `ctx.http` of one node execution: a refusal throws SafeFetchError (the node fails `safe_fetch_<refusal>` unless it catches it). */
  forNode(ctx: Pick<NodeExecutionContext, 'principal'> & Partial<Pick<NodeExecutionContext, 'emit' | 'runId'>>): NodeHttp {
    const sink: EgressDecisionSink | undefined = ctx.emit ? async (d) => void (await ctx.emit!('egress.decided', { ...d })) : undefined;
    return {
      safeFetch: async (url, init) => {
        const o = await this.fetch(ctx.principal, url, init, undefined, sink, ctx.runId);
        if (!o.ok) throw new SafeFetchError(o.refusal, o.reason);
        return o.response;
      },
    };
  }
}
