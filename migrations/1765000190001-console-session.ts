import type { MigrationInterface, QueryRunner } from 'typeorm';

/** The console's single sign-on state, server-side (src/platform/identity/console-session.entity.ts). */
export class ConsoleSession1765000190001 implements MigrationInterface {
  name = 'ConsoleSession1765000190001';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE IF NOT EXISTS "console_session" ("id" text NOT NULL, "kind" text NOT NULL, "tenant" text, "workspace" text, "principal" text, "scopes" text array NOT NULL DEFAULT '{}', "nonce" text, "verifier" text, "expires_at" TIMESTAMP WITH TIME ZONE NOT NULL, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_de017bbd4b96ce481ef2729ad1a" PRIMARY KEY ("id"))`);
    await q.query(`CREATE INDEX IF NOT EXISTS "console_session_expires_idx" ON "console_session" ("expires_at")`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE "console_session"`);
  }
}
