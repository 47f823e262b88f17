import { NodeExecutionContext } from '@openwop-host/plugin-sdk';
import { CoreDelayExecutor } from './core-delay.executor';

function ctx(config: Record<string, unknown>, signal = new AbortController().signal): NodeExecutionContext {
  return { config, signal } as unknown as NodeExecutionContext;
}

describe('core.delay', () => {
  const realSetTimeout = global.setTimeout;
  afterEach(() => {
    global.setTimeout = realSetTimeout;
  });

  it('waits the whole delay by the wall clock even when a timer fires early', async () => {
    // A timer due on the event loop's cached clock can fire before the wall clock reaches its time: here every
    // timer fires 15 ms early (or at once when shorter).
    global.setTimeout = ((fn: () => void, ms?: number) => realSetTimeout(fn, Math.max(0, (ms ?? 0) - 15))) as typeof setTimeout;
    const started = Date.now();
    const result = await new CoreDelayExecutor().execute(ctx({ ms: 60 }));
    expect(Date.now() - started).toBeGreaterThanOrEqual(60);
    expect(result).toEqual({ outputs: { delayedMs: 60 } });
  });

  it('stops at once on abort, and refuses to start when already aborted', async () => {
    const ac = new AbortController();
    const started = Date.now();
    const running = new CoreDelayExecutor().execute(ctx({ ms: 10_000 }, ac.signal));
    realSetTimeout(() => ac.abort(), 20);
    await expect(running).rejects.toMatchObject({ code: 'aborted' });
    expect(Date.now() - started).toBeLessThan(5_000);
    await expect(new CoreDelayExecutor().execute(ctx({ ms: 10 }, ac.signal))).rejects.toMatchObject({ code: 'aborted' });
  });

  it('takes seconds, or the default when a templated value resolved to nothing', async () => {
    await expect(new CoreDelayExecutor().execute(ctx({ seconds: 0.01 }))).resolves.toEqual({ outputs: { delayedMs: 10 } });
    await expect(new CoreDelayExecutor().execute(ctx({ ms: '', defaultMs: 5 }))).resolves.toEqual({ outputs: { delayedMs: 5 } });
  });
});
