import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { rowsOf } from '../database/rows';

/**
 * The one writer of `host_secret`: secrets the host generates once and every replica shares (the
 * interrupt tokens' signing secret, the audit log's database key). The first replica that needs a
 * secret writes it; every other one, and every later process, reads the same row.
 */
@Injectable()
export class HostSecretStore {
  constructor(private readonly ds: DataSource) {}

  /**
   * The secret `name`, made by `make` (called only when the row is missing) and written unless
   * another replica wrote it first. On `m`, inside the caller's transaction; `created`: this call
   * wrote it (so it commits with that transaction).
   */
  async getOrCreate(name: string, make: () => Buffer, m?: EntityManager): Promise<{ value: Buffer; created: boolean }> {
    const db = m ?? this.ds;
    const read = async () => rowsOf<{ value: Buffer | Uint8Array }>(await db.query(`SELECT "value" FROM "host_secret" WHERE "name" = $1`, [name]))[0];
    const existing = await read();
    if (existing) return { value: Buffer.from(existing.value), created: false };
    const [written] = rowsOf<{ value: Buffer | Uint8Array }>(
      await db.query(`INSERT INTO "host_secret" ("name", "value") VALUES ($1, $2) ON CONFLICT ("name") DO NOTHING RETURNING "value"`, [name, make()]),
    );
    if (written) return { value: Buffer.from(written.value), created: true };
    return { value: Buffer.from((await read()).value), created: false };
  }
}
