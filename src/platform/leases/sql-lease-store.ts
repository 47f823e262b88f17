import type { LeaseStore } from './lease-keeper';
import { WiringFault } from '../errors/internal-fault';
import { rowsOf } from '../database/rows';

/** What the store needs of a database handle (a TypeORM DataSource or EntityManager, a pg client wrapper). */
export interface LeaseQueryable {
  query(sql: string, params: unknown[]): Promise<unknown>;
}

export interface SqlLeaseTable {
  /** The table; its rows carry `lease_owner` (text) and `lease_expires_at` (timestamptz). */
  table: string;
  /** The text column that names a row (the lease key). */
  keyColumn: string;
}

const IDENTIFIER = /^[a-z_][a-z0-9_]*$/;

/**
 * A lease store over a table whose rows carry `lease_owner` and `lease_expires_at`, extended on the
 * database clock (one clock for every replica, whatever their own clocks say). Renewal and release are
 * conditional on the owner, so neither can touch a row another replica has claimed.
 */
export function sqlLeaseStore(db: LeaseQueryable, t: SqlLeaseTable): LeaseStore<string> {
  for (const name of [t.table, t.keyColumn]) if (!IDENTIFIER.test(name)) throw new WiringFault(`not a plain SQL identifier: ${name}`);
  const renewSql = `UPDATE "${t.table}" SET "lease_expires_at" = now() + ($3::int * interval '1 millisecond')
    WHERE "${t.keyColumn}" = ANY($2) AND "lease_owner" = $1 RETURNING "${t.keyColumn}" AS "key"`;
  const releaseSql = `UPDATE "${t.table}" SET "lease_owner" = NULL, "lease_expires_at" = NULL WHERE "${t.keyColumn}" = ANY($2) AND "lease_owner" = $1`;
  return {
    async renew(owner, keys, leaseMs) {
      const rows = rowsOf<{ key: string }>(await db.query(renewSql, [owner, keys, Math.ceil(leaseMs)]));
      return new Map(rows.map((r) => [r.key, undefined]));
    },
    async release(owner, keys) {
      await db.query(releaseSql, [owner, keys]);
    },
  };
}
