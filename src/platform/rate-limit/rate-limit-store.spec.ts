import { MemoryRateLimitStore, RateLimitStore } from './rate-limit-store';

describe('MemoryRateLimitStore', () => {
  it('counts per key and per window: a new window starts again at 1', async () => {
    const s: RateLimitStore = new MemoryRateLimitStore(60_000);
    expect(await s.hit('read\u0000a', 0, 60_000)).toBe(1);
    expect(await s.hit('read\u0000a', 0, 60_000)).toBe(2);
    expect(await s.hit('read\u0000b', 0, 60_000)).toBe(1);
    expect(await s.peek('read\u0000a', 0)).toBe(2);
    // peek counts nothing
    expect(await s.peek('read\u0000a', 0)).toBe(2);
    expect(await s.peek('read\u0000a', 60_000)).toBe(0);
    expect(await s.hit('read\u0000a', 60_000, 60_000)).toBe(1);
    expect(await s.peek('write\u0000a', 0)).toBe(0);
  });

  it('stays bounded: past 10,000 counters, those whose window is over are swept before a new one is added', async () => {
    let now = 0;
    const s = new MemoryRateLimitStore(1_000, () => now);
    for (let i = 0; i < 10_000; i++) s.count(`k${i}`, 0);
    expect(s.size).toBe(10_000);
    // Still inside the longest window: nothing is swept.
    now = 500;
    s.count('fresh', 0);
    expect(s.size).toBe(10_001);
    now = 5_000;
    s.count('later', 5_000);
    expect(s.size).toBe(1);
    expect(s.current('later', 5_000)).toBe(1);
    await s.close();
    expect(s.size).toBe(0);
  });
});
