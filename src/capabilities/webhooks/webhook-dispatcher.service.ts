import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import type { Counter } from 'prom-client';
import { DataSource } from 'typeorm';
import { CredentialStoreService } from '../connections';
import { HOST_CONFIG, HostConfig } from '../../platform/config/host-config';
import { HOST_VERSION } from '../../platform/discovery/discovery.service';
import { toView } from '../../platform/events/event-log.service';
import { storedEvents } from '../../platform/events/stored-events';
import { toV2Event } from '../../platform/events/v2-events';
import { legacySubject } from '../../platform/identity/subject';
import { RunRecordsPort } from '../../platform/run-ports/run-records';
import { MetricsService } from '../../platform/metrics/metrics.service';
import { OutboxWorker } from '../../platform/outbox/outbox-worker';
import { PeriodicTaskService } from '../../platform/scheduler/periodic-task.service';
import { WebhookSubscriptionEntity } from './webhook.entities';
import type { Resolver } from '../../platform/http/egress-guard';
import { guardedPost } from '../../platform/http/guarded-post';
import { retryDelayMs } from './webhooks.settings';
import { messageId, SIGNATURE_ALGORITHM, signV1, standardHeaders, whsecKey } from './webhook-signing';
import { bound, optedIn, v2DeliveryBody } from './webhook-v2';

/** One claimed outbox row. `attempts` already counts this attempt and fences its result. */
interface ClaimedDelivery {
  id: string;
  tenant: string;
  webhook_id: string;
  event_id: string;
  run_id: string;
  /** The event's place in its run's stream: its key in the event table. */
  sequence: string;
  attempts: number;
}

export type AttemptOutcome = { ok: true; status: number } | { ok: false; status?: number; error: string; permanent?: boolean };

export { signV1 } from './webhook-signing';

/** Longest error text kept in the delivery history (never a receiver's body, never a secret). */
const MAX_ERROR = 300;

/**
 * The webhook delivery worker, on the platform's outbox worker (OutboxWorker): every replica that runs
 * background work (OPENWOP_SCHEDULER_ENABLED) claims due outbox rows with `FOR UPDATE SKIP LOCKED`, so
 * replicas never send the same attempt twice; a claim is a lease (`next_attempt_at` moves past the
 * attempt's deadline), so the rows of a replica that died mid-attempt are claimed again once it
 * expires. Each attempt re-resolves and re-validates the target and connects to the address it
 * validated, follows no redirect, and is signed with v1. Failures are retried with exponential backoff
 * up to the configured attempts.
 */
@Injectable()
export class WebhookDispatcherService implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('webhooks.delivery');
  private readonly outcomes: Counter<'outcome'>;
  /** The outbox poll: every pollMs after the last pass, or at once when a delivery frees a slot. */
  private readonly outbox: OutboxWorker<ClaimedDelivery>;
  /** Replaced by tests to resolve names without DNS. */
  resolver?: Resolver;

  constructor(
    private readonly ds: DataSource,
    private readonly credentials: CredentialStoreService,
    metrics: MetricsService,
    @Inject(HOST_CONFIG) private readonly config: HostConfig,
    scheduler: PeriodicTaskService,
    private readonly runs: RunRecordsPort,
  ) {
    this.outcomes = metrics.counter({
      name: 'openwop_webhook_delivery_attempts_total',
      help: 'Webhook delivery attempts this replica made, by outcome (succeeded, retrying, failed: attempts exhausted or target refused).',
      labelNames: ['outcome'],
    });
    this.outbox = new OutboxWorker<ClaimedDelivery>(ds, scheduler, {
      name: 'webhooks.delivery',
      table: 'webhook_delivery',
      key: 'id',
      returning: ['id', 'tenant', 'webhook_id', 'event_id', 'run_id', 'sequence', 'attempts'],
      poll: config.schedulerEnabled,
      pollMs: this.settings.pollMs,
      concurrency: this.settings.concurrency,
      // How long a claim holds a row before another replica may take it over.
      leaseMs: this.settings.timeoutMs * 2 + 10_000,
      attempt: (row) => this.deliver(row),
      failed: (what, err, row) => {
        // A failed claim: the database is away, try again at the next poll.
        if (what === 'claim') this.logger.warn({ msg: 'webhook outbox claim failed', err: (err as Error).message });
        else this.logger.error({ msg: 'webhook delivery crashed', deliveryId: row?.id, err: (err as Error).message });
      },
    });
  }

  private get settings() {
    return this.config.webhooks;
  }

  onApplicationBootstrap(): void {
    // Deliveries are sent by the polls of the replicas that run background work only.
    if (this.config.schedulerEnabled) this.outbox.start({ wake: true });
  }

  async onApplicationShutdown(): Promise<void> {
    await this.outbox.stop();
  }

  /**
   * Removes up to `limit` finished deliveries older than the history window (oldest first; the
   * partial due index does not cover them, so the history index's tenant order is not needed).
   */
  async pruneHistory(limit = 1000): Promise<number> {
    const [, n] = (await this.ds.query(
      `DELETE FROM "webhook_delivery" WHERE "id" IN (
         SELECT "id" FROM "webhook_delivery"
          WHERE "status" IN ('succeeded', 'failed') AND "updated_at" < now() - make_interval(days => $1::int)
          LIMIT $2 FOR UPDATE SKIP LOCKED)`,
      [this.settings.historyDays, limit],
    )) as [unknown, number];
    return n;
  }

  /** Claims up to `limit` due deliveries (pending, or delivering with an expired lease). */
  claim(limit: number): Promise<ClaimedDelivery[]> {
    return this.outbox.claim(limit);
  }

  /** Sends one claimed delivery and records the outcome (unless the claim was lost meanwhile). */
  async deliver(row: ClaimedDelivery): Promise<void> {
    const max = this.settings.maxAttempts;
    // A row claimed again and again by replicas that died mid-attempt still ends.
    if (row.attempts > max) return this.finish(row, { ok: false, error: 'attempts exhausted' });
    const sub = await this.ds.getRepository(WebhookSubscriptionEntity).findOne({ where: { tenant: row.tenant, id: row.webhook_id } });
    if (!sub) return; // unregistered: its deliveries went with it
    const [event] = await storedEvents(this.ds, { tenant: sub.tenant, streamId: row.run_id, afterSequence: Number(row.sequence) - 1, limit: 1 });
    if (!event || event.sequence !== String(row.sequence) || event.id !== row.event_id) return this.finish(row, { ok: false, error: 'the event no longer exists', permanent: true });
    const runEvent = toView(event);
    let secrets: { current: string; previous?: string };
    try {
      secrets = await this.secrets(sub);
    } catch (e) {
      return this.finish(row, { ok: false, error: `signing secret unavailable: ${(e as Error).message}` });
    }
    const timestamp = Math.floor(Date.now() / 1000);
    const base = { 'content-type': 'application/json', 'user-agent': `openwop-webhook-dispatcher/${HOST_VERSION}` };
    let body: string;
    let headers: Record<string, string>;
    if (sub.major === 2) {
      // A major-2 subscriber (docs/webhooks.md "Major 2"): the v2 body, ids tenant-bound, the five
      // OpenWOP-* headers and, while major 1 is served beside it, the X-openwop-* family with identical
      // values; OpenWOP-Signature stays on the previous secret through a rotation overlap.
      let v2: Record<string, unknown>;
      let workspace: string | undefined;
      try {
        ({ event: v2, workspace } = await this.v2Event(sub.tenant, runEvent));
      } catch (e) {
        // An event the v2 vocabulary cannot carry is dead-lettered at once, never retried (webhooks.md §Durability).
        return this.finish(row, { ok: false, error: `payload_unprojectable: ${(e as Error).message}`, permanent: true });
      }
      body = v2DeliveryBody(v2, workspace);
      const family = {
        'webhook-id': bound(sub.tenant, sub.id),
        'event-type': runEvent.type,
        timestamp: String(timestamp),
        signature: signV1(secrets.previous ?? secrets.current, timestamp, body),
        'signature-algorithm': SIGNATURE_ALGORITHM,
      };
      headers = { ...base };
      for (const [k, v] of Object.entries(family)) {
        headers[`openwop-${k}`] = v;
        headers[`x-openwop-${k}`] = v;
      }
      if (optedIn(sub.signatureAlgorithms)) {
        const keys = [secrets.current, ...(secrets.previous ? [secrets.previous] : [])].map(whsecKey).filter((k): k is Buffer => k !== undefined);
        Object.assign(headers, standardHeaders(keys, messageId(row.id), timestamp, body));
      }
    } else {
      body = JSON.stringify({ runId: runEvent.runId, tenantId: event.tenant, workspaceId: event.workspace ?? event.tenant, event: runEvent });
      headers = {
        ...base,
        'x-openwop-webhook-id': sub.id,
        'x-openwop-event-type': runEvent.type,
        'x-openwop-delivery-id': row.id,
        'x-openwop-timestamp': String(timestamp),
        'x-openwop-signature': signV1(secrets.current, timestamp, body),
        'x-openwop-signature-algorithm': SIGNATURE_ALGORITHM,
      };
    }
    const outcome = await this.send(sub.url, headers, body);
    if (!outcome.ok) {
      this.logger.warn({ msg: 'webhook delivery attempt failed', deliveryId: row.id, webhookId: sub.id, secretFingerprint: sub.secretFingerprint, attempt: row.attempts, status: outcome.status, error: outcome.error });
    }
    await this.finish(row, outcome);
  }

  /** The run event as a major-2 reader of its run gets it (the run's owner and subject from its record), and the run's workspace. */
  private async v2Event(tenant: string, view: ReturnType<typeof toView>): Promise<{ event: Record<string, unknown>; workspace?: string }> {
    const scope = { tenant };
    const run = await this.runs.find(scope, view.runId);
    const subject = (await this.runs.subjects(scope, [view.runId])).get(view.runId) ?? legacySubject(tenant, run?.owner.principal);
    const workspace = run?.owner.workspace ?? undefined;
    const owner = { tenant, ...(workspace ? { workspace } : {}), subject };
    return { event: toV2Event(view, { tenant, owner }), workspace };
  }

  /** The subscription's signing secret, and the previous one while a rotation overlap lasts. */
  private async secrets(sub: WebhookSubscriptionEntity): Promise<{ current: string; previous?: string }> {
    const current = await this.credentials.open(sub.tenant, sub.secretRef);
    if (!sub.previousSecretRef || !sub.previousSecretExpiresAt || sub.previousSecretExpiresAt.getTime() <= Date.now()) return { current };
    return { current, previous: await this.credentials.open(sub.tenant, sub.previousSecretRef) };
  }

  private async finish(row: ClaimedDelivery, outcome: AttemptOutcome): Promise<void> {
    if (outcome.ok) {
      this.outcomes.inc({ outcome: 'succeeded' });
      await this.outbox.finish(row, { status: `'succeeded'`, last_status_code: '$3', last_error: 'NULL', delivered_at: 'now()' }, [outcome.status]);
      return;
    }
    const error = outcome.error.slice(0, MAX_ERROR);
    const last = outcome.permanent || row.attempts >= this.settings.maxAttempts;
    this.outcomes.inc({ outcome: last ? 'failed' : 'retrying' });
    if (last) {
      await this.outbox.finish(row, { status: `'failed'`, last_status_code: '$3', last_error: '$4' }, [outcome.status ?? null, error]);
      return;
    }
    const delay = retryDelayMs(this.settings, row.attempts);
    await this.outbox.finish(
      row,
      { status: `'pending'`, last_status_code: '$3', last_error: '$4', next_attempt_at: 'now() + make_interval(secs => $5::double precision / 1000)' },
      [outcome.status ?? null, error, delay],
    );
  }

  /** One POST to a re-validated, pinned address; no redirects; the configured deadline. */
  send(rawUrl: string, headers: Record<string, string>, body: string): Promise<AttemptOutcome> {
    return guardedPost(rawUrl, headers, body, { allowPrivate: this.settings.allowPrivate, allowedPorts: this.settings.allowedPorts, timeoutMs: this.settings.timeoutMs, resolver: this.resolver });
  }
}
