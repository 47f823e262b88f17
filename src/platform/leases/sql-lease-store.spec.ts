import { sqlLeaseStore } from './sql-lease-store';

describe('sqlLeaseStore', () => {
  const calls: Array<{ sql: string; params: unknown[] }> = [];
  const db = (answer: unknown) => ({
    query: async (sql: string, params: unknown[]) => {
      calls.push({ sql, params });
      return answer;
    },
  });
  beforeEach(() => (calls.length = 0));

  it('renews in one owner-conditional statement on the database clock and answers the keys it still holds', async () => {
    // TypeORM's pg driver shape: [rows, affected].
    const store = sqlLeaseStore(db([[{ key: 'a' }], 1]), { table: 'scheduled_task', keyColumn: 'name' });
    const kept = await store.renew('o:1', ['a', 'b'], 1500.5);
    expect([...kept.keys()]).toEqual(['a']);
    expect(calls).toHaveLength(1);
    expect(calls[0].sql).toMatch(/UPDATE "scheduled_task" SET "lease_expires_at" = now\(\) \+/);
    expect(calls[0].sql).toMatch(/WHERE "name" = ANY\(\$2\) AND "lease_owner" = \$1 RETURNING "name"/);
    expect(calls[0].params).toEqual(['o:1', ['a', 'b'], 1501]);
  });

  it('reads plain row arrays and pg results too', async () => {
    expect([...(await sqlLeaseStore(db([{ key: 'x' }]), { table: 't', keyColumn: 'k' }).renew('o', ['x'], 10)).keys()]).toEqual(['x']);
    expect([...(await sqlLeaseStore(db({ rows: [{ key: 'y' }] }), { table: 't', keyColumn: 'k' }).renew('o', ['y'], 10)).keys()]).toEqual(['y']);
    expect((await sqlLeaseStore(db([[], 0]), { table: 't', keyColumn: 'k' }).renew('o', ['z'], 10)).size).toBe(0);
  });

  it('releases only what the owner still holds', async () => {
    await sqlLeaseStore(db([[], 0]), { table: 'scheduled_task', keyColumn: 'name' }).release!('o:1', ['a']);
    expect(calls[0].sql).toBe(`UPDATE "scheduled_task" SET "lease_owner" = NULL, "lease_expires_at" = NULL WHERE "name" = ANY($2) AND "lease_owner" = $1`);
    expect(calls[0].params).toEqual(['o:1', ['a']]);
  });

  it('refuses names that are not plain identifiers', () => {
    expect(() => sqlLeaseStore(db([]), { table: 'x"; DROP TABLE y; --', keyColumn: 'name' })).toThrow(/identifier/);
  });
});
