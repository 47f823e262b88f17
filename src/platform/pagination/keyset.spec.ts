import { decodeCursor } from './cursor';
import { KeysetOptions, keysetRows, keysetSql } from './keyset';

const OPTS: KeysetOptions = {
  keys: [{ column: 'r."created_at"', type: 'timestamptz' }, { column: 'r."id"', type: 'uuid' }],
  direction: 'DESC',
  binding: { list: 'things', tenant: 't1', filters: { status: 'failed' } },
};

describe('keysetSql / keysetRows: keyset pagination of a plain SQL statement', () => {
  it('a first page: no condition, the order and a limit of one row more, its placeholder after the statement\'s own', () => {
    const params: unknown[] = ['t1'];
    const k = keysetSql({ limit: 2 }, OPTS, params);
    expect(k.after).toBeUndefined();
    expect(k.orderBy).toBe('r."created_at" DESC, r."id" DESC');
    expect(k.select).toBe(`to_char(r."created_at" AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS "__keyset_0", (r."id")::text AS "__keyset_1"`);
    expect(k.limit).toBe('$2');
    expect(params).toEqual(['t1', 3]);
  });

  it('the next page: strictly after the cursor\'s position, typed, and a cursor only when a row more was read', () => {
    const first = keysetSql({ limit: 2 }, OPTS, []);
    const rows = [
      { id: 'a', __keyset_0: '2026-12-06T10:00:00.000003Z', __keyset_1: '11111111-1111-4111-8111-111111111111' },
      { id: 'b', __keyset_0: '2026-12-06T10:00:00.000002Z', __keyset_1: '22222222-2222-4222-8222-222222222222' },
      { id: 'c', __keyset_0: '2026-12-06T10:00:00.000001Z', __keyset_1: '33333333-3333-4333-8333-333333333333' },
    ];
    const page = keysetRows(rows, first, OPTS);
    expect(page.items.map((r) => r.id)).toEqual(['a', 'b']);
    expect(decodeCursor(page.nextCursor!, OPTS.binding, ['timestamptz', 'uuid'])).toEqual([rows[1].__keyset_0, rows[1].__keyset_1]);
    expect(keysetRows(rows.slice(0, 2), first, OPTS).nextCursor).toBeNull();

    const params: unknown[] = ['t1', 'failed'];
    const next = keysetSql({ limit: 2, cursor: page.nextCursor! }, OPTS, params);
    expect(next.after).toBe('(r."created_at", r."id") < (CAST($3 AS timestamptz), CAST($4 AS uuid))');
    expect(next.limit).toBe('$5');
    expect(params).toEqual(['t1', 'failed', rows[1].__keyset_0, rows[1].__keyset_1, 3]);
  });

  it('refuses a cursor of another list, caller or filter (400), before any SQL', () => {
    const page = keysetRows([{ __keyset_0: '2026-12-06T10:00:00.000001Z', __keyset_1: '11111111-1111-4111-8111-111111111111' }, {}], keysetSql({ limit: 1 }, OPTS, []), OPTS);
    expect(() => keysetSql({ cursor: page.nextCursor! }, { ...OPTS, binding: { ...OPTS.binding, filters: { status: 'completed' } } }, [])).toThrow(/cursor is not valid here/);
  });
});
