import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Webhooks under protocol major 2 (docs/webhooks.md, "Major 2"): the contract a subscription was
 * registered under (`major`: its deliveries are rendered for it), the signature schemes it opted
 * into (`signature_algorithms`, null = `v1` only; `standard-webhooks-1` adds the Standard Webhooks
 * headers), and a secret rotation in progress (the previous secret's sealed value and when it stops
 * signing). Existing rows are major-1 subscriptions and keep delivering exactly as before.
 */
export class WebhooksV21765000160000 implements MigrationInterface {
  name = 'WebhooksV21765000160000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "webhook_subscription" ADD COLUMN "major" smallint NOT NULL DEFAULT 1`);
    await q.query(`ALTER TABLE "webhook_subscription" ADD COLUMN "signature_algorithms" text array`);
    await q.query(`ALTER TABLE "webhook_subscription" ADD COLUMN "previous_secret_ref" uuid`);
    await q.query(`ALTER TABLE "webhook_subscription" ADD COLUMN "previous_secret_expires_at" TIMESTAMP WITH TIME ZONE`);
    await q.query(`ALTER TABLE "webhook_subscription" ADD COLUMN "rotated_at" TIMESTAMP WITH TIME ZONE`);
  }

  async down(q: QueryRunner): Promise<void> {
    for (const c of ['rotated_at', 'previous_secret_expires_at', 'previous_secret_ref', 'signature_algorithms', 'major']) {
      await q.query(`ALTER TABLE "webhook_subscription" DROP COLUMN "${c}"`);
    }
  }
}
