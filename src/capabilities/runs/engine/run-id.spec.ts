import { newRunId } from './run-id';
import { UUID } from '../../../platform/ids';

describe('newRunId', () => {
  it('is a version 7 UUID whose first 48 bits are the creation time in milliseconds', () => {
    const at = Date.UTC(2026, 11, 6, 6, 30, 0, 123);
    const id = newRunId(at);
    expect(id).toMatch(UUID);
    expect(id[14]).toBe('7');
    expect('89ab').toContain(id[19]);
    expect(parseInt(id.slice(0, 8) + id.slice(9, 13), 16)).toBe(at);
  });

  it('sorts by creation time and is unique within a millisecond', () => {
    const ids = [newRunId(1_000), newRunId(1_001), newRunId(2_000_000_000_000)];
    expect([...ids].sort()).toEqual(ids);
    const same = new Set(Array.from({ length: 1000 }, () => newRunId(5)));
    expect(same.size).toBe(1000);
  });
});
