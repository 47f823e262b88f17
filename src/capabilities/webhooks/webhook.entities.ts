import { Column, CreateDateColumn, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn, PrimaryGeneratedColumn, UpdateDateColumn } from 'typeorm';
import { WorkspaceOwnedEntity } from '../../platform/tenancy/tenant-owned.entity';

/**
 * A webhook subscription (webhooks.md): a URL and an event filter, owned by the tenant (and the
 * workspace, when the registering credential is bound to one) it was registered under. The signing
 * secret is never stored here: `secretRef` is the id of its sealed value in the credential store.
 */
@Entity({ name: 'webhook_subscription' })
@Index('webhook_subscription_tenant_idx', ['tenant', 'createdAt'])
export class WebhookSubscriptionEntity extends WorkspaceOwnedEntity {
  /** `wh_<random>`: the protocol's `webhookId`. */
  @PrimaryColumn({ type: 'text' })
  id: string;

  @Column({ type: 'text' })
  principal: string;

  @Column({ type: 'text' })
  url: string;

  @Column({ type: 'text', array: true })
  events: string[];

  @Column({ type: 'text', array: true, nullable: true })
  tags: string[] | null;

  @Column({ name: 'secret_ref', type: 'uuid' })
  secretRef: string;

  @Column({ name: 'secret_fingerprint', type: 'text' })
  secretFingerprint: string;

  /** The protocol major the subscription was registered under: its deliveries follow that contract (migration 1765000160000). */
  @Column({ type: 'smallint', default: 1 })
  major: number;

  /** The signature schemes it opted into (`v1`, `standard-webhooks-1`); null is `v1` alone. */
  @Column({ name: 'signature_algorithms', type: 'text', array: true, nullable: true })
  signatureAlgorithms: string[] | null;

  /** A rotation in progress: the previous secret's sealed value, signing beside the new one until `previousSecretExpiresAt`. */
  @Column({ name: 'previous_secret_ref', type: 'uuid', nullable: true })
  previousSecretRef: string | null;

  @Column({ name: 'previous_secret_expires_at', type: 'timestamptz', nullable: true })
  previousSecretExpiresAt: Date | null;

  @Column({ name: 'rotated_at', type: 'timestamptz', nullable: true })
  rotatedAt: Date | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}

/**
 * The delivery outbox: one row per (subscription, run event), written by the `event` table's
 * insert trigger in the transaction that appended the event (migration 1764910000000), so an event
 * that committed is never lost for a subscription and one that rolled back is never delivered.
 * Workers claim due rows with FOR UPDATE SKIP LOCKED; `next_attempt_at` is also the claim's lease.
 */
@Entity({ name: 'webhook_delivery' })
@Index('webhook_delivery_due_idx', ['nextAttemptAt'], { where: `"status" IN ('pending', 'delivering')` })
// A subscription's history, and by status, ending in the primary key (migration 1765000000600).
@Index('webhook_delivery_history_created_idx', ['tenant', 'webhookId', 'createdAt', 'id'])
@Index('webhook_delivery_status_created_idx', ['tenant', 'webhookId', 'status', 'createdAt', 'id'])
@Index('webhook_delivery_event_uq', ['webhookId', 'eventId'], { unique: true })
export class WebhookDeliveryEntity extends WorkspaceOwnedEntity {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ name: 'webhook_id', type: 'text' })
  webhookId: string;

  @ManyToOne(() => WebhookSubscriptionEntity, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'webhook_id' })
  subscription?: WebhookSubscriptionEntity;

  @Column({ name: 'event_id', type: 'uuid' })
  eventId: string;

  @Column({ name: 'run_id', type: 'text' })
  runId: string;

  @Column({ type: 'bigint' })
  sequence: string;

  @Column({ name: 'event_type', type: 'text' })
  eventType: string;

  /** pending → delivering → succeeded | failed (attempts exhausted); delivering again after a lost claim. */
  @Column({ type: 'text', default: 'pending' })
  status: string;

  @Column({ type: 'integer', default: 0 })
  attempts: number;

  @Column({ name: 'next_attempt_at', type: 'timestamptz', default: () => 'now()' })
  nextAttemptAt: Date;

  @Column({ name: 'last_status_code', type: 'integer', nullable: true })
  lastStatusCode: number | null;

  @Column({ name: 'last_error', type: 'text', nullable: true })
  lastError: string | null;

  @Column({ name: 'delivered_at', type: 'timestamptz', nullable: true })
  deliveredAt: Date | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}

export const WEBHOOKS_ENTITIES = [WebhookSubscriptionEntity, WebhookDeliveryEntity];
