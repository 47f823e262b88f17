import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Two-key-overlap rotation of connection credentials (RFC 0046 §D): the material a rotation replaced
 * stays sealed in the credential store, referenced from its connection, until its overlap ends; a
 * sweep then deletes it.
 */
export class ConnectionCredentialOverlap1765100050000 implements MigrationInterface {
  name = 'ConnectionCredentialOverlap1765100050000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "connection" ADD "previous_credential_id" uuid`);
    await q.query(`ALTER TABLE "connection" ADD "previous_credential_expires_at" TIMESTAMP WITH TIME ZONE`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "connection" DROP COLUMN "previous_credential_expires_at"`);
    await q.query(`ALTER TABLE "connection" DROP COLUMN "previous_credential_id"`);
  }
}
