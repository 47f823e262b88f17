import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { HOST_CONFIG, HostConfig } from '../../../platform/config/host-config';
import { retryDelayMs } from '../../../platform/config/webhook-settings';
import { HOST_VERSION } from '../../../platform/discovery/discovery.service';
import { ValidationError } from '../../../platform/errors/domain-error';
import { checkWebhookUrl, EgressPolicy, Resolver, resolveWebhookTarget } from '../../../platform/http/egress-guard';
import { guardedPost, GuardedPostOutcome } from '../../../platform/http/guarded-post';
import { RetentionService } from '../../../platform/retention/retention.service';
import { OutboxWorker } from '../../../platform/outbox/outbox-worker';
import { PeriodicTaskService } from '../../../platform/scheduler/periodic-task.service';
import { ApprovalsService } from '../../approvals';
import { RunEngineService } from '../engine/run-engine.service';
import type { CallbackStatus } from './interrupt-callback.entity';
import { InterruptsService } from './interrupts.service';

/** Callbacks sent at once by one replica (each a bounded POST). */
const CONCURRENCY = 8;
/** Longest error text kept on a row (never a receiver's body). */
const MAX_ERROR = 300;

/** One opened interrupt to notify: its run, tenant and node, and the run's callback URL. */
export interface OpenedInterrupt {
  id: string;
  tenant: string;
  nodeId: string;
  callbackUrl: string;
}

/** One claimed outbox row; `attempts` already counts this attempt and fences its result. */
interface ClaimedCallback {
  interrupt_id: string;
  tenant: string;
  run_id: string;
  node_id: string;
  url: string;
  attempts: number;
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
 * Delivery is an outbox (`interrupt_callback`, one row per interrupt): when an execution parks a run
 * on open interrupts, a row per interrupt is written (once: the interrupt id is the key) and sent at
 * once; a failed attempt is retried with the webhooks' backoff and attempt budget
 * (`OPENWOP_WEBHOOK_MAX_ATTEMPTS`, `_RETRY_BASE_MS`, `_RETRY_MAX_MS`) by the outbox poll of any replica
 * that runs background work (`OPENWOP_SCHEDULER_ENABLED`). Rows are claimed with `FOR UPDATE SKIP
 * LOCKED` and a lease, so no two replicas send the same attempt, and a restart loses nothing. An
 * interrupt resolved before its notification went out is not notified (`obsolete`).
 *
 * The notification carries no authority: it names the run, node and interrupt, and for an interrupt
 * resolvable by token (an external event) the signed token and its route; a receiver that acts on
 * it reads the interrupt back from the host (`GET /interrupts/{token}`, or the run with its own
 * credential), which is what authenticates it. Nothing else is signed: a callback URL has no shared
 * secret with the host.
 */
@Injectable()
export class InterruptCallbacks implements OnModuleInit, OnApplicationBootstrap, OnApplicationShutdown {
  private readonly log = new Logger('interrupt-callbacks');
  /** Replaced by tests to resolve names without DNS. */
  resolver?: Resolver;
  private readonly outbox: OutboxWorker<ClaimedCallback>;

  constructor(
    private readonly interrupts: InterruptsService,
    private readonly approvals: ApprovalsService,
    @Inject(HOST_CONFIG) private readonly config: HostConfig,
    private readonly engine: RunEngineService,
    private readonly ds: DataSource,
    scheduler: PeriodicTaskService,
    private readonly retention: RetentionService,
  ) {
    this.outbox = new OutboxWorker<ClaimedCallback>(ds, scheduler, {
      name: 'runs.interrupt-callbacks',
      table: 'interrupt_callback',
      key: 'interrupt_id',
      returning: ['interrupt_id', 'tenant', 'run_id', 'node_id', 'url', 'attempts'],
      // Retries (and rows a replica that died left behind) are picked up by the poll of replicas running background work.
      poll: config.schedulerEnabled,
      pollMs: config.webhooks.pollMs,
      concurrency: CONCURRENCY,
      // How long a claim holds a row before another replica may send it again.
      leaseMs: config.webhooks.timeoutMs * 2 + 10_000,
      attempt: (row) => this.attempt(row),
      failed: (what, err, row) => {
        if (what === 'claim') this.log.warn({ msg: 'interrupt callback claim failed', err: (err as Error).message });
        else this.log.warn({ msg: 'interrupt callback attempt crashed', runId: row?.run_id, nodeId: row?.node_id, err: (err as Error).message });
      },
    });
  }

  onModuleInit(): void {
    this.engine.onExecutionEnded((row) => this.parked(row));
    this.retention.registerRunPurger({ counts: 'interruptCallbacks', deletes: (runs) => `DELETE FROM "interrupt_callback" c USING ${runs} d WHERE c."run_id" = d."id" RETURNING 1` });
  }

  onApplicationBootstrap(): void {
    this.outbox.start();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.outbox.stop();
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
   * An execution of a run created with a callbackUrl ended (the engine tells every one): each
   * interrupt it left open gets its outbox row (once per interrupt, whichever replica parked the run)
   * and a first attempt now, in the background, so the engine never waits on a receiver.
   */
  parked(run: { id: string; tenant: string; metadata?: Record<string, unknown> | null }): void {
    const callbackUrl = run.metadata?.callbackUrl;
    if (typeof callbackUrl !== 'string') return;
    void (async () => {
      const gates = (await this.approvals.pendingOfRun(run.tenant, run.id)).filter((g) => g.nodeId);
      if (!gates.length) return;
      const inserted = (await this.ds.query(
        `INSERT INTO "interrupt_callback" ("interrupt_id", "tenant", "run_id", "node_id", "url")
         SELECT g."id", $1, $2, g."node_id", $3 FROM json_to_recordset($4::json) AS g("id" uuid, "node_id" text)
         ON CONFLICT ("interrupt_id") DO NOTHING RETURNING "interrupt_id"`,
        [run.tenant, run.id, callbackUrl, JSON.stringify(gates.map((g) => ({ id: g.id, node_id: g.nodeId })))],
      )) as Array<{ interrupt_id: string }>;
      for (const row of await this.outbox.claim(inserted.map((r) => r.interrupt_id))) this.outbox.run(row);
    })().catch((e: unknown) => this.log.warn({ msg: 'interrupt callback not queued', runId: run.id, err: (e as Error).message }));
  }

  /** One claimed attempt, its outcome recorded unless the claim was lost meanwhile. */
  private async attempt(row: ClaimedCallback): Promise<void> {
    const max = this.config.webhooks.maxAttempts;
    // A row claimed again and again by replicas that died mid-attempt still ends.
    if (row.attempts > max) return this.finish(row, 'failed', 'attempts exhausted');
    const out = await this.deliver({ id: row.run_id, tenant: row.tenant, nodeId: row.node_id, callbackUrl: row.url });
    if (!out) return this.finish(row, 'obsolete', 'the interrupt is no longer open');
    if (out.ok) return this.finish(row, 'delivered', null);
    this.log.warn({ msg: 'interrupt callback failed', runId: row.run_id, nodeId: row.node_id, attempt: row.attempts, err: out.error });
    // A refused target stays refused: no retry.
    if (out.error.startsWith('target refused') || row.attempts >= max) return this.finish(row, 'failed', out.error);
    return this.finish(row, 'pending', out.error, retryDelayMs(this.config.webhooks, row.attempts));
  }

  private finish(row: ClaimedCallback, status: CallbackStatus, error: string | null, retryInMs?: number): Promise<void> {
    return this.outbox.finish(
      row,
      {
        status: '$3',
        last_error: '$4',
        next_attempt_at: `CASE WHEN $5::double precision IS NULL THEN "next_attempt_at" ELSE now() + make_interval(secs => $5::double precision / 1000) END`,
      },
      [status, error === null ? null : error.slice(0, MAX_ERROR), retryInMs ?? null],
    );
  }

  /** One POST of the notification (no retry; the outbox retries); undefined when the interrupt is no longer open. */
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
    return guardedPost(run.callbackUrl, headers, body, { ...this.policy, timeoutMs: this.config.webhooks.timeoutMs, resolver: this.resolver });
  }
}
