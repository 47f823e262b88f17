/**
 * Fails a Jest file (or a group of them) in which a query was sent on a `pg` client while two others
 * were still on it (one executing, one queued): pg 8 queues it with a deprecation warning ("Calling
 * client.query() when the client is already executing a query"), pg 9 refuses it. It happens where
 * reads inside one transaction (one connection) are started together (`Promise.all`). The check is
 * pg's own condition, on the `pg` module the host loads in this file's registry (Jest's copy of
 * `process` does not receive the process's warnings), and the failure carries where the query was sent.
 */
import { Client } from 'pg';

const seen: string[] = [];
const original = Client.prototype.query;
Client.prototype.query = function (this: Client & { _queryQueue?: unknown[]; pipeline?: boolean }, ...args: unknown[]) {
  if ((this._queryQueue?.length ?? 0) > 0 && !this.pipeline && seen.length < 3) {
    const stack = new Error('a query sent on a pg client with another already queued').stack ?? '';
    // TypeORM's own schema diff (RdbmsSchemaBuilder: the migrations test's drift check, never the host) reads its catalog that way.
    if (!stack.includes('RdbmsSchemaBuilder')) seen.push(stack);
  }
  return (original as (...a: unknown[]) => unknown).apply(this, args);
} as typeof Client.prototype.query;

afterAll(() => {
  Client.prototype.query = original;
  if (seen.length) throw new Error(`a query was sent on a pg client still executing others (pg 9 refuses it):\n${seen.join('\n\n')}`);
});
