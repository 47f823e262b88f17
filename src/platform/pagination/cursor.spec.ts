import { DomainError } from '../errors/domain-error';
import { decodeCursor, encodeCursor } from './cursor';
import { arrayPage } from './keyset';

const binding = { list: 'things', tenant: 'acme', filters: { state: 'draft', kind: undefined } };
const TS = '2026-06-13T10:20:30.123456Z';
const ID = '0f8fad5b-d9cb-469f-a165-70867728950e';

function refusal(fn: () => unknown): DomainError {
  try {
    fn();
  } catch (e) {
    return e as DomainError;
  }
  throw new Error('not refused');
}

describe('cursor codec', () => {
  it('round-trips a position as opaque base64url', () => {
    const c = encodeCursor(binding, [TS, ID]);
    expect(c).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(decodeCursor(c, binding, ['timestamptz', 'uuid'])).toEqual([TS, ID]);
    // Undefined filters and filter order do not matter.
    expect(decodeCursor(c, { list: 'things', tenant: 'acme', filters: { state: 'draft' } }, ['timestamptz', 'uuid'])).toEqual([TS, ID]);
  });

  it.each([
    ['another tenant', { ...binding, tenant: 'globex' }],
    ['another workspace', { ...binding, workspace: 'w1' }],
    ['another list', { ...binding, list: 'others' }],
    ['another filter', { ...binding, filters: { state: 'applied' } }],
  ])('refuses a cursor presented for %s with 400 validation_error', (_l, other) => {
    const e = refusal(() => decodeCursor(encodeCursor(binding, [TS, ID]), other, ['timestamptz', 'uuid']));
    expect([e.code, e.status, e.details]).toEqual(['validation_error', 400, { fields: ['cursor'] }]);
  });

  it.each([
    ['not base64url', '%%%'],
    ['not JSON', Buffer.from('nope').toString('base64url')],
    ['JSON null', Buffer.from('null').toString('base64url')],
    ['another version', Buffer.from(JSON.stringify({ v: 2, b: 'x', k: [] })).toString('base64url')],
  ])('refuses a cursor that is %s', (_l, token) => {
    expect(refusal(() => decodeCursor(token, binding, ['text'])).code).toBe('validation_error');
  });

  it.each([
    ['an impossible date', ['2026-02-30T00:00:00.000000Z', ID]],
    ['a 25th hour', ['2026-02-03T24:00:00.000000Z', ID]],
    ['millisecond precision', ['2026-02-03T10:00:00.000Z', ID]],
    ['a malformed uuid', [TS, 'x']],
    ['a missing component', [TS]],
    ['a number instead of a string', [TS, 7]],
  ])('refuses a well-bound cursor with %s before it reaches SQL', (_l, key) => {
    const token = encodeCursor(binding, key as string[]);
    expect(refusal(() => decodeCursor(token, binding, ['timestamptz', 'uuid'])).code).toBe('validation_error');
  });

  it('refuses text positions PostgreSQL cannot hold', () => {
    for (const bad of ['a\u0000b', '\uD800']) {
      expect(refusal(() => decodeCursor(encodeCursor(binding, [bad]), binding, ['text'])).code).toBe('validation_error');
    }
    expect(decodeCursor(encodeCursor(binding, ['ok ✓']), binding, ['text'])).toEqual(['ok ✓']);
  });
});

describe('arrayPage', () => {
  const items = ['d', 'a', 'c', 'b', 'e'].map((id) => ({ id }));
  it('pages a list computed in memory by its unique key, stable when items are added', () => {
    const p1 = arrayPage(items, (x) => x.id, { limit: 2 }, binding);
    expect(p1.items.map((x) => x.id)).toEqual(['a', 'b']);
    const grown = [...items, { id: 'aa' }, { id: 'f' }];
    const p2 = arrayPage(grown, (x) => x.id, { limit: 2, cursor: p1.nextCursor! }, binding);
    expect(p2.items.map((x) => x.id)).toEqual(['c', 'd']);
    const p3 = arrayPage(grown, (x) => x.id, { limit: 2, cursor: p2.nextCursor! }, binding);
    expect(p3).toEqual({ items: [{ id: 'e' }, { id: 'f' }], nextCursor: null });
  });
});
