import { LocalTaskLoop } from './local-task';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('LocalTaskLoop', () => {
  it('rate: a pass every interval, ticks while a pass runs skipped (passes never overlap)', async () => {
    let running = 0;
    let most = 0;
    let passes = 0;
    const loop = new LocalTaskLoop({ name: 't', intervalMs: 10, run: async () => {
      running++;
      most = Math.max(most, running);
      passes++;
      await sleep(35);
      running--;
    } }, () => undefined);
    loop.start();
    await sleep(200);
    await loop.stop();
    expect(most).toBe(1);
    // A 35 ms pass on a 10 ms rate: far fewer passes than ticks, but it keeps going.
    expect(passes).toBeGreaterThanOrEqual(3);
    expect(passes).toBeLessThanOrEqual(8);
  });

  it('delay: the next pass an interval after the previous one ended; wake runs one at once', async () => {
    const starts: number[] = [];
    const loop = new LocalTaskLoop({ name: 't', intervalMs: 60, cadence: 'delay', run: async () => {
      starts.push(Date.now());
      await sleep(20);
    } }, () => undefined);
    const t0 = Date.now();
    loop.start();
    loop.wake();
    await sleep(190);
    await loop.stop();
    expect(starts[0] - t0).toBeLessThan(15);
    for (let i = 1; i < starts.length; i++) expect(starts[i] - starts[i - 1]).toBeGreaterThanOrEqual(75);
    expect(starts.length).toBeGreaterThanOrEqual(2);
  });

  it('a wake during a pass runs one more pass right after it; a failing pass is reported and the loop goes on; stop waits for the pass', async () => {
    const errors: unknown[] = [];
    let passes = 0;
    let release!: () => void;
    const loop = new LocalTaskLoop({ name: 't', intervalMs: 10_000, cadence: 'delay', run: async () => {
      passes++;
      if (passes === 1) await new Promise<void>((r) => (release = r));
      if (passes === 2) throw new Error('boom');
    } }, (e) => errors.push(e));
    loop.start();
    loop.wake();
    loop.wake();
    expect(passes).toBe(1);
    release();
    await sleep(20);
    expect(passes).toBe(2);
    expect(errors).toHaveLength(1);
    loop.wake();
    await loop.stop();
    expect(passes).toBe(3);
    loop.wake();
    await sleep(10);
    expect(passes).toBe(3);
  });
});
