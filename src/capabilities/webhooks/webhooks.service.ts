import { AuditLogService, auditActor } from '../../platform/audit/audit-log.service';
import { createHash, randomBytes } from 'node:crypto';
import { Inject, Injectable, Logger } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { CredentialStoreService } from '../connections';
import { HOST_CONFIG, HostConfig } from '../../platform/config/host-config';
import { ConflictError, ForbiddenError, ValidationError } from '../../platform/errors/domain-error';
import type { Principal, TenantScope } from '../../platform/identity/principal';
import { keysetPage } from '../../platform/pagination/keyset';
import type { Page, PageRequest } from '../../platform/pagination/page-query';
import { WebhookDeliveryEntity, WebhookSubscriptionEntity } from './webhook.entities';
import { checkWebhookUrl, Resolver, resolveWebhookTarget } from '../../platform/http/egress-guard';
import { SubscriptionNotFoundError, WebhookUrlRejectedError } from './webhooks.errors';
import { inScope, scopedQuery } from '../../platform/tenancy/workspace-scope';
import { HOST_VERSION } from '../../platform/discovery/discovery.service';
import { mintWhsec, SIGNATURE_ALGORITHM, whsecKey } from './webhook-signing';
import { appliedAlgorithms, bound, optedIn, storedEventTypes, verifyEndpoint } from './webhook-v2';

export { SIGNATURE_ALGORITHM } from './webhook-signing';
/** The dead-letter read's page ceiling (`webhooks.deadLetter.maxPageSize`). */
export const DEAD_LETTER_PAGE = 100;
/** Subscriptions one tenant may hold (keeps lists and the enqueue join small). */
export const MAX_SUBSCRIPTIONS_PER_TENANT = 100;

export interface RegisterWebhookInput {
  url: string;
  events: string[];
  tenantId?: string;
  tags?: string[];
  /** Major 2 only: the subscriber's own secret (else one is generated and returned once). */
  secret?: string;
  /** Major 2 only: the signature schemes to apply (`v1`, optionally `standard-webhooks-1`). */
  signatureAlgorithms?: string[];
}

/** What a major-2 registration answers (webhooks.md §Surfaces): the id, the applied schemes, a generated secret once. */
export interface WebhookRegistrationV2 {
  webhookId: string;
  signatureAlgorithms: string[];
  secret?: string;
}

/** A delivery whose retries were exhausted, as the dead-letter read names it: never its body, headers or the secret. */
export interface DeadLetterView {
  deliveryId: string;
  webhookId: string;
  runId: string;
  sequence: number;
  eventType: string;
  attempts: number;
  lastStatusCode?: number;
  lastError?: string;
  deadLetteredAt: string;
  expiresAt: string;
}

export interface RotationView {
  webhookId: string;
  rotatedAt: string;
  previousSecretExpiresAt: string;
}

export interface WebhookView {
  webhookId: string;
  url: string;
  events: string[];
  tags?: string[];
  workspace?: string;
  secretFingerprint: string;
  signatureAlgorithm: string;
  createdAt: string;
}

export interface WebhookRegistration extends WebhookView {
  /** Returned once, here; never readable again. */
  secret: string;
}

export interface DeliveryView {
  deliveryId: string;
  webhookId: string;
  runId: string;
  sequence: number;
  eventType: string;
  status: string;
  attempts: number;
  nextAttemptAt?: string;
  lastStatusCode?: number;
  lastError?: string;
  deliveredAt?: string;
  createdAt: string;
}

/** First 8 hex characters of sha256(secret): what logs and reads show instead of the secret. */
export function secretFingerprint(secret: string): string {
  return createHash('sha256').update(secret).digest('hex').slice(0, 8);
}

function view(s: WebhookSubscriptionEntity): WebhookView {
  const v: WebhookView = {
    webhookId: s.id,
    url: s.url,
    events: [...s.events],
    secretFingerprint: s.secretFingerprint,
    signatureAlgorithm: SIGNATURE_ALGORITHM,
    createdAt: s.createdAt.toISOString(),
  };
  if (s.tags) v.tags = [...s.tags];
  if (s.workspace) v.workspace = s.workspace;
  return v;
}

function deliveryView(d: WebhookDeliveryEntity): DeliveryView {
  const v: DeliveryView = {
    deliveryId: d.id,
    webhookId: d.webhookId,
    runId: d.runId,
    sequence: Number(d.sequence),
    eventType: d.eventType,
    status: d.status,
    attempts: d.attempts,
    createdAt: d.createdAt.toISOString(),
  };
  if (d.status === 'pending' || d.status === 'delivering') v.nextAttemptAt = d.nextAttemptAt.toISOString();
  if (d.lastStatusCode !== null) v.lastStatusCode = d.lastStatusCode;
  if (d.lastError) v.lastError = d.lastError;
  if (d.deliveredAt) v.deliveredAt = d.deliveredAt.toISOString();
  return v;
}

/**
 * Webhook subscriptions (webhooks.md §Endpoints): tenant- and workspace-scoped. A workspace-bound
 * credential registers, sees and removes only its workspace's subscriptions; a tenant-level one
 * sees the whole tenant's. An id outside the caller's scope answers like an unknown one.
 */
@Injectable()
export class WebhooksService {
  private readonly logger = new Logger('webhooks');
  /** Replaced by tests to resolve names without DNS. */
  resolver?: Resolver;

  constructor(
    private readonly ds: DataSource,
    private readonly credentials: CredentialStoreService,
    @Inject(HOST_CONFIG) private readonly config: HostConfig,
    private readonly audit: AuditLogService,
  ) {}

  /** Whether subscriptions can be registered on this host (their secrets need the credential store). */
  available(): boolean {
    return this.credentials.available();
  }

  /** The membership gate: a named tenant must be the caller's own. */
  assertTenant(p: Principal, tenantId: string | undefined): void {
    if (tenantId !== undefined && tenantId !== p.tenant) {
      throw new ForbiddenError('The credential is not a member of that tenant.');
    }
  }

  /**
   * Refuses what the SSRF guard refuses. A host name is resolved and every address it resolves to
   * must be public; a name that does not resolve now is accepted, since every delivery resolves
   * and validates it again (and connects only to the address it validated).
   */
  async checkUrl(raw: string): Promise<string> {
    const { allowPrivate, allowedPorts } = this.config.webhooks;
    const checked = checkWebhookUrl(raw, { allowPrivate, allowedPorts });
    if (!checked.ok) throw new WebhookUrlRejectedError(checked.reason);
    if (!allowPrivate) {
      const target = await resolveWebhookTarget(checked.url, { allowPrivate, resolver: this.resolver });
      if (!target.ok && !target.unresolved) throw new WebhookUrlRejectedError(target.reason);
    }
    return checked.url.toString();
  }

  /** `POST /v1/webhooks` (major 1): a generated hex secret, returned once with the subscription's view. */
  async register(p: Principal, input: RegisterWebhookInput): Promise<WebhookRegistration> {
    this.assertTenant(p, input.tenantId);
    const url = await this.checkUrl(input.url);
    const secret = randomBytes(32).toString('hex');
    const row = await this.create(p, { ...input, url }, { id: `wh_${randomBytes(12).toString('hex')}`, secret, major: 1, algorithms: null });
    return { ...view(row), secret };
  }

  /**
   * `POST /webhooks` (major 2, webhooks.md §Surfaces): the subscriber's secret or a generated
   * `whsec_` one (returned once, only then); a Standard Webhooks opt-in is validated and its endpoint
   * verified before anything is persisted. The id is minted in the tenant-bound grammar.
   */
  async registerV2(p: Principal, input: RegisterWebhookInput): Promise<WebhookRegistrationV2> {
    const algorithms = appliedAlgorithms(input.signatureAlgorithms, input.secret);
    const url = await this.checkUrl(input.url);
    const secret = input.secret ?? mintWhsec();
    if (optedIn(algorithms)) {
      const { allowPrivate, allowedPorts } = this.config.webhooks;
      await verifyEndpoint(url, secret, `openwop-webhook-dispatcher/${HOST_VERSION}`, { allowPrivate, allowedPorts, resolver: this.resolver });
    }
    const row = await this.create(p, { ...input, url, events: storedEventTypes(input.events) }, { id: `wh-${randomBytes(12).toString('hex')}`, secret, major: 2, algorithms: input.signatureAlgorithms ? algorithms : null });
    return { webhookId: bound(row.tenant, row.id), signatureAlgorithms: algorithms, ...(input.secret === undefined ? { secret } : {}) };
  }

  private async create(
    p: Principal,
    input: RegisterWebhookInput,
    mint: { id: string; secret: string; major: number; algorithms: string[] | null },
  ): Promise<WebhookSubscriptionEntity> {
    const { id, secret, major, algorithms } = mint;
    const url = input.url;
    const events = [...new Set(input.events)];
    const tags = input.tags ? [...new Set(input.tags)] : null;
    const fingerprint = secretFingerprint(secret);
    const row = await this.ds.transaction(async (m) => {
      // A soft cap: two registrations racing at the limit may both pass (it bounds size, not security).
      const [{ n }] = (await m.query(`SELECT count(*)::int AS "n" FROM "webhook_subscription" WHERE "tenant" = $1`, [p.tenant])) as Array<{ n: number }>;
      if (n >= MAX_SUBSCRIPTIONS_PER_TENANT) {
        throw new ConflictError('webhook_limit_reached', `A tenant may hold at most ${MAX_SUBSCRIPTIONS_PER_TENANT} webhook subscriptions.`, { max: MAX_SUBSCRIPTIONS_PER_TENANT });
      }
      const secretRef = await this.credentials.store(p.tenant, secret, m);
      const repo = m.getRepository(WebhookSubscriptionEntity);
      await repo.insert({ id, tenant: p.tenant, workspace: p.workspace ?? null, principal: p.principal, url, events, tags, secretRef, secretFingerprint: fingerprint, major, signatureAlgorithms: algorithms });
      const saved = await repo.findOneByOrFail({ id, tenant: p.tenant });
      // Only the URL's origin: a path or query may carry a receiver's token.
      await this.audit.record(m, {
        tenant: p.tenant, workspace: p.workspace, actor: auditActor(p), action: 'webhook.registered', resource: { type: 'webhook', id },
        details: { origin: new URL(url).origin, events, fingerprint, ...(major === 2 ? { major, signatureAlgorithms: algorithms ?? [SIGNATURE_ALGORITHM] } : {}) },
      });
      return saved;
    });
    this.logger.log({ msg: 'webhook registered', webhookId: id, tenant: p.tenant, secretFingerprint: fingerprint, events });
    return row;
  }

  private where(scope: TenantScope, id?: string): Record<string, unknown> {
    return inScope(scope, id !== undefined ? { id } : {});
  }

  /** Every subscription of the caller (the seam's `list`): a tenant holds at most MAX_SUBSCRIPTIONS_PER_TENANT. */
  async list(scope: TenantScope): Promise<WebhookView[]> {
    const rows = await this.ds.getRepository(WebhookSubscriptionEntity).find({ where: this.where(scope), order: { createdAt: 'ASC', id: 'ASC' }, take: MAX_SUBSCRIPTIONS_PER_TENANT });
    return rows.map(view);
  }

  /** The caller's subscriptions, oldest first, a page at a time (`GET /v1/webhooks`). */
  async page(scope: TenantScope, q: PageRequest): Promise<Page<WebhookView>> {
    const qb = scopedQuery(this.ds.getRepository(WebhookSubscriptionEntity).createQueryBuilder('w'), scope);
    const page = await keysetPage(qb, q, {
      keys: [{ column: 'w.created_at', type: 'timestamptz' }, { column: 'w.id', type: 'text' }],
      direction: 'ASC',
      binding: { list: 'webhooks', tenant: scope.tenant, workspace: scope.workspace, filters: {} },
    });
    return { items: page.items.map(view), nextCursor: page.nextCursor };
  }

  private async find(scope: TenantScope, id: string): Promise<WebhookSubscriptionEntity> {
    const row = await this.ds.getRepository(WebhookSubscriptionEntity).findOne({ where: this.where(scope, id) });
    if (!row) throw new SubscriptionNotFoundError();
    return row;
  }

  async get(p: Principal, id: string, tenantId?: string): Promise<WebhookView> {
    this.assertTenant(p, tenantId);
    return view(await this.find(p, id));
  }

  /** Removes the subscription, its secret and its delivery history; pending deliveries stop at once. */
  async unregister(p: Principal, id: string, tenantId?: string): Promise<void> {
    this.assertTenant(p, tenantId);
    await this.ds.transaction(async (m) => {
      const row = await m.getRepository(WebhookSubscriptionEntity).findOne({ where: this.where(p, id), lock: { mode: 'pessimistic_write' } });
      if (!row) throw new SubscriptionNotFoundError();
      await m.getRepository(WebhookSubscriptionEntity).delete({ tenant: row.tenant, id: row.id });
      await this.credentials.delete(row.tenant, row.secretRef, m);
      if (row.previousSecretRef) await this.credentials.delete(row.tenant, row.previousSecretRef, m);
      await this.audit.record(m, { tenant: row.tenant, workspace: row.workspace ?? undefined, actor: auditActor(p), action: 'webhook.unregistered', resource: { type: 'webhook', id: row.id } });
    });
    this.logger.log({ msg: 'webhook unregistered', webhookId: id, tenant: p.tenant });
  }

  /**
   * `POST /webhooks/{webhookId}/rotate-secret` (RFC 0201 §E): only for a subscription that opted into
   * Standard Webhooks (`400 validation_error` otherwise); the new `whsec_` secret signs from now on,
   * beside the previous one for the configured overlap (in `webhook-signature`; `OpenWOP-Signature`
   * stays on the previous secret until then). A rotation during an overlap retires the secret that
   * was already on its way out. No secret is answered.
   */
  async rotateSecret(p: Principal, id: string, secret: string): Promise<RotationView> {
    if (!whsecKey(secret)) throw new ValidationError('secret must be whsec_ followed by the base64 of 24 to 64 bytes', { field: 'secret' });
    const overlap = this.config.webhooks.rotationOverlapSeconds;
    const out = await this.ds.transaction(async (m) => {
      const repo = m.getRepository(WebhookSubscriptionEntity);
      const row = await repo.findOne({ where: this.where(p, id), lock: { mode: 'pessimistic_write' } });
      if (!row) throw new SubscriptionNotFoundError();
      if (!optedIn(row.signatureAlgorithms)) throw new ValidationError('Only a subscription that opted into standard-webhooks-1 can rotate its secret.', { field: 'webhookId' });
      if (row.previousSecretRef) await this.credentials.delete(row.tenant, row.previousSecretRef, m);
      const secretRef = await this.credentials.store(row.tenant, secret, m);
      const [{ now }] = (await m.query(`SELECT now() AS "now"`)) as Array<{ now: Date }>;
      const expires = new Date(now.getTime() + overlap * 1000);
      const fingerprint = secretFingerprint(secret);
      await repo.update({ tenant: row.tenant, id: row.id }, { previousSecretRef: row.secretRef, previousSecretExpiresAt: expires, rotatedAt: now, secretRef, secretFingerprint: fingerprint });
      await this.audit.record(m, {
        tenant: row.tenant, workspace: row.workspace ?? undefined, actor: auditActor(p), action: 'webhook.secret-rotated', resource: { type: 'webhook', id: row.id },
        details: { fingerprint, previousFingerprint: row.secretFingerprint, overlapSeconds: overlap },
      });
      return { row, rotatedAt: now, expires, fingerprint };
    });
    this.logger.log({ msg: 'webhook secret rotated', webhookId: out.row.id, tenant: out.row.tenant, secretFingerprint: out.fingerprint, previousSecretFingerprint: out.row.secretFingerprint });
    return { webhookId: out.row.id, rotatedAt: out.rotatedAt.toISOString(), previousSecretExpiresAt: out.expires.toISOString() };
  }

  /** Forgets up to `limit` previous secrets whose rotation overlap has ended: their sealed values are deleted (hourly, webhooks.module). */
  async retireRotatedSecrets(limit = 100): Promise<number> {
    return this.ds.transaction(async (m) => {
      const rows = (await m.query(
        `SELECT "tenant", "id", "previous_secret_ref" AS "ref" FROM "webhook_subscription"
          WHERE "previous_secret_ref" IS NOT NULL AND "previous_secret_expires_at" <= now() LIMIT $1 FOR UPDATE SKIP LOCKED`,
        [limit],
      )) as Array<{ tenant: string; id: string; ref: string }>;
      for (const r of rows) {
        await m.query(`UPDATE "webhook_subscription" SET "previous_secret_ref" = NULL, "previous_secret_expires_at" = NULL WHERE "tenant" = $1 AND "id" = $2`, [r.tenant, r.id]);
        await this.credentials.delete(r.tenant, r.ref, m);
      }
      return rows.length;
    });
  }

  /**
   * `GET /webhooks/{webhookId}/dead-letters` (RFC 0188): the subscription's deliveries whose retries
   * were exhausted, newest first, kept for the history window; a record names a delivery and never
   * carries its body, headers or the secret. An unknown or unregistered subscription is 404.
   */
  async deadLetters(p: Principal, id: string, q: PageRequest & { tenantId?: string }): Promise<Page<DeadLetterView>> {
    this.assertTenant(p, q.tenantId);
    const sub = await this.find(p, id);
    const qb = this.ds.getRepository(WebhookDeliveryEntity).createQueryBuilder('d').where(`d.tenant = :tenant AND d.webhook_id = :webhook AND d.status = 'failed'`, { tenant: sub.tenant, webhook: sub.id });
    const page = await keysetPage(qb, { ...q, limit: Math.min(q.limit ?? DEAD_LETTER_PAGE, DEAD_LETTER_PAGE) }, {
      keys: [{ column: 'd.created_at', type: 'timestamptz' }, { column: 'd.id', type: 'uuid' }],
      direction: 'DESC',
      binding: { list: `webhook-dead-letters:${sub.id}`, tenant: p.tenant, workspace: p.workspace, filters: {} },
    });
    const days = this.config.webhooks.historyDays;
    return {
      items: page.items.map((d) => {
        const v: DeadLetterView = {
          deliveryId: d.id, webhookId: d.webhookId, runId: d.runId, sequence: Number(d.sequence), eventType: d.eventType, attempts: d.attempts,
          deadLetteredAt: d.updatedAt.toISOString(), expiresAt: new Date(d.updatedAt.getTime() + days * 86_400_000).toISOString(),
        };
        if (d.lastStatusCode !== null) v.lastStatusCode = d.lastStatusCode;
        if (d.lastError) v.lastError = d.lastError;
        return v;
      }),
      nextCursor: page.nextCursor,
    };
  }

  /**
   * RFC 0053 redrive of a dead-lettered delivery of the caller's scope (`GET /v1/dead-letters` routes): `retry` sends
   * it again from its first attempt (its retry policy starts over), `purge` removes it. 404 unless it is dead-lettered.
   */
  async redriveDeadLetter(p: Principal, deliveryId: string, action: 'retry' | 'purge'): Promise<void> {
    const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(deliveryId);
    const d = uuid ? await this.ds.getRepository(WebhookDeliveryEntity).findOne({ where: { tenant: p.tenant, id: deliveryId, status: 'failed' } }) : null;
    if (!d) throw new SubscriptionNotFoundError();
    await this.find(p, d.webhookId); // the subscription is of the caller's scope (workspace)
    if (action === 'purge') await this.ds.query(`DELETE FROM "webhook_delivery" WHERE "id" = $1 AND "status" = 'failed'`, [d.id]);
    else {
      await this.ds.query(
        `UPDATE "webhook_delivery" SET "status" = 'pending', "attempts" = 0, "next_attempt_at" = now(), "last_status_code" = NULL, "last_error" = NULL, "updated_at" = now() WHERE "id" = $1 AND "status" = 'failed'`,
        [d.id],
      );
    }
  }

  /** A subscription's delivery history, newest first, a page at a time, optionally of one status. */
  async deliveries(p: Principal, id: string, q: PageRequest & { status?: string; tenantId?: string }): Promise<Page<DeliveryView>> {
    this.assertTenant(p, q.tenantId);
    const sub = await this.find(p, id);
    const qb = this.ds.getRepository(WebhookDeliveryEntity).createQueryBuilder('d').where('d.tenant = :tenant AND d.webhook_id = :webhook', { tenant: sub.tenant, webhook: sub.id });
    if (q.status) qb.andWhere('d.status = :status', { status: q.status });
    const page = await keysetPage(qb, q, {
      keys: [{ column: 'd.created_at', type: 'timestamptz' }, { column: 'd.id', type: 'uuid' }],
      direction: 'DESC',
      binding: { list: `webhook-deliveries:${sub.id}`, tenant: p.tenant, workspace: p.workspace, filters: { status: q.status } },
    });
    return { items: page.items.map(deliveryView), nextCursor: page.nextCursor };
  }
}
