import { Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { HOST_CONFIG, HostConfig } from '../../../platform/config/host-config';
import { HOST_VERSION } from '../../../platform/discovery/discovery.service';
import { ValidationError } from '../../../platform/errors/domain-error';
import { checkWebhookUrl, EgressPolicy, Resolver, resolveWebhookTarget } from '../../../platform/http/egress-guard';
import { guardedPost, GuardedPostOutcome } from '../../../platform/http/guarded-post';
import { ApprovalsService } from '../../approvals';
import { RunEngineService } from '../engine/run-engine.service';
import { InterruptsService } from './interrupts.service';

/** Attempts of one callback and the waits between them (in this process; see `opened`). */
const ATTEMPTS = 3;
const BACKOFF_MS = [1000, 4000];

/** Interrupt ids this process has notified (bounded): a run claimed again on its still-pending gate notifies nothing twice. */
const REMEMBERED = 10_000;

/** One opened interrupt to notify: its run, tenant and node, and the run's callback URL. */
export interface OpenedInterrupt {
  id: string;
  tenant: string;
  nodeId: string;
  callbackUrl: string;
}

/**
 * Callback delivery (`createRun.callbackUrl`, interrupt.md §Callback delivery, RFC 0196 §A): when a
 * run's node opens an interrupt, the host POSTs a notification of it to the URL the run was created
 * with. The URL is the caller's choice, so it goes through the webhooks' SSRF guard twice: at create
 * (`checkUrl`: a URL the registration guard refuses is `400 validation_error`, `details.field:
 * "callbackUrl"`) and at every delivery (`guardedPost`: every resolved address re-validated, the
 * connection pinned to it, no redirect followed). The policy is the webhooks' ports with its own
 * private-target relaxation (`OPENWOP_CALLBACK_ALLOW_PRIVATE`), so opening the webhooks' guard for
 * local receivers does not open it to every holder of `runs:create`.
 *
 * The notification carries no authority: it names the run, node and interrupt, and for an interrupt
 * resolvable by token (an external event) the signed token and its route; a receiver that acts on
 * it reads the interrupt back from the host (`GET /interrupts/{token}`, or the run with its own
 * credential), which is what authenticates it. Nothing else is signed: a callback URL has no shared
 * secret with the host.
 */
@Injectable()
export class InterruptCallbacks implements OnModuleInit {
  private readonly log = new Logger('interrupt-callbacks');
  /** Replaced by tests to resolve names without DNS. */
  resolver?: Resolver;
  private readonly notified = new Set<string>();

  constructor(
    private readonly interrupts: InterruptsService,
    private readonly approvals: ApprovalsService,
    @Inject(HOST_CONFIG) private readonly config: HostConfig,
    private readonly engine: RunEngineService,
  ) {}

  onModuleInit(): void {
    this.engine.onExecutionEnded((row) => this.parked(row));
  }

  private get policy(): EgressPolicy {
    return { allowPrivate: this.config.webhooks.callbackAllowPrivate, allowedPorts: this.config.webhooks.allowedPorts };
  }

  /** The create-time guard: the URL as the webhook registration guard checks it, refused as `callbackUrl`. */
  async checkUrl(raw: string): Promise<string> {
    const policy = this.policy;
    const refuse = (reason: string) => new ValidationError(`callbackUrl is refused by the egress guard: ${reason}.`, { field: 'callbackUrl', reason });
    const checked = checkWebhookUrl(raw, policy);
    if (!checked.ok) throw refuse(checked.reason);
    if (!policy.allowPrivate) {
      const target = await resolveWebhookTarget(checked.url, { allowPrivate: false, resolver: this.resolver });
      // A name that does not resolve now is accepted: every delivery resolves and validates it again.
      if (!target.ok && !target.unresolved) throw refuse(target.reason);
    }
    return raw;
  }

  /**
   * An execution of a run created with a callbackUrl ended (the engine tells every one): the
   * interrupts it left open that this process has not notified yet are notified, in the background,
   * up to three attempts each, so the engine never waits on a receiver. Delivery is at most once per
   * interrupt and process and not kept across a restart (the run's snapshot and events stay the record).
   */
  parked(run: { id: string; tenant: string; metadata?: Record<string, unknown> | null }): void {
    const callbackUrl = run.metadata?.callbackUrl;
    if (typeof callbackUrl !== 'string') return;
    void (async () => {
      for (const gate of await this.approvals.pendingOfRun(run.tenant, run.id)) {
        if (!gate.nodeId || this.notified.has(gate.id)) continue;
        if (this.notified.size >= REMEMBERED) this.notified.delete(this.notified.values().next().value as string);
        this.notified.add(gate.id);
        await this.deliver({ id: run.id, tenant: run.tenant, nodeId: gate.nodeId, callbackUrl });
      }
    })().catch((e: unknown) => this.log.warn({ msg: 'interrupt callback not delivered', runId: run.id, err: (e as Error).message }));
  }

  /** One notification: the body, then the attempts; answers the last outcome (tests read it). */
  async deliver(run: OpenedInterrupt): Promise<GuardedPostOutcome | undefined> {
    // The interrupt as a major-2 snapshot shows it (its token in the ow2 form, which both majors resolve).
    const v = await this.interrupts.forSnapshot({ id: run.id, tenant: run.tenant, status: 'waiting-approval', currentNodeId: run.nodeId }, 2);
    if (!v || v.nodeId !== run.nodeId) return undefined;
    const body = JSON.stringify({
      type: 'interrupt.requested',
      runId: `${run.tenant}/${run.id}`,
      nodeId: v.nodeId,
      interruptId: `${run.tenant}/${v.interruptId}`,
      kind: v.kind,
      title: v.title,
      requestedAt: v.requestedAt,
      expiresAt: v.expiresAt,
      ...(v.interruptToken ? { token: v.interruptToken, tokenExpiresAt: v.tokenExpiresAt, tokenUrl: v.callbackUrl } : {}),
    });
    const headers = {
      'content-type': 'application/json',
      'user-agent': `openwop-interrupt-callback/${HOST_VERSION}`,
      'openwop-event-type': 'interrupt.requested',
      'openwop-timestamp': String(Math.floor(Date.now() / 1000)),
    };
    let out: GuardedPostOutcome | undefined;
    for (let i = 0; i < ATTEMPTS; i++) {
      if (i > 0) await new Promise((r) => setTimeout(r, BACKOFF_MS[i - 1]));
      out = await guardedPost(run.callbackUrl, headers, body, { ...this.policy, timeoutMs: this.config.webhooks.timeoutMs, resolver: this.resolver });
      // A refused target stays refused: no retry.
      if (out.ok || out.error.startsWith('target refused')) break;
    }
    if (out && !out.ok) this.log.warn({ msg: 'interrupt callback failed', runId: run.id, nodeId: run.nodeId, err: out.error });
    return out;
  }
}
