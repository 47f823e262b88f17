import { randomBytes } from 'node:crypto';
import * as net from 'node:net';
import Redis from 'ioredis';
import { freePort, MACHINE_REDIS, redisServerSkipReason, redisSkipReason, startPrivateRedis } from '../../../test/support/redis-server';
import type { SharedStoreConfig } from '../config/shared-store-settings';
import { MemoryRateLimitStore } from './rate-limit-store';
import { RedisRateLimitStore } from './redis-rate-limit-store';

const reason = redisSkipReason();
if (reason) process.stderr.write(`Redis rate-limit store tests against the machine's Redis skipped: ${reason}\n`);
const withRedis = reason ? it.skip : it;
const serverReason = redisServerSkipReason();
if (serverReason) process.stderr.write(`Redis rate-limit store tests with a private Redis skipped: ${serverReason}\n`);
const withPrivateRedis = serverReason ? it.skip : it;

type Change = [boolean, string | undefined];

function store(url: string, prefix: string, timeoutMs = 250) {
  const changes: Change[] = [];
  const config: SharedStoreConfig = { redisUrl: url, keyPrefix: prefix, timeoutMs };
  const fallback = new MemoryRateLimitStore(60_000);
  const s = new RedisRateLimitStore(config, fallback, (shared, why) => changes.push([shared, why]));
  return { s, changes, fallback };
}

describe('RedisRateLimitStore', () => {
  const open: RedisRateLimitStore[] = [];
  const make = (...args: Parameters<typeof store>) => {
    const made = store(...args);
    open.push(made.s);
    return made;
  };
  afterEach(async () => {
    await Promise.all(open.splice(0).map((s) => s.close()));
  });

  withRedis('two stores on one Redis (two replicas) count one budget, atomically, under concurrent hits', async () => {
    const prefix = `owtest:${randomBytes(4).toString('hex')}:`;
    const a = make(MACHINE_REDIS.url, prefix);
    const b = make(MACHINE_REDIS.url, prefix);
    await Promise.all([a.s.start(2000), b.s.start(2000)]);
    expect(a.s.isShared && b.s.isShared).toBe(true);
    expect(a.changes).toEqual([[true, undefined]]);
    expect(await a.s.hit('read\u0000key:1', 60_000, 60_000)).toBe(1);
    expect(await b.s.hit('read\u0000key:1', 60_000, 60_000)).toBe(2);
    const counts = await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 ? a : b).s.hit('read\u0000key:1', 60_000, 60_000)));
    expect(counts.sort((x, y) => x - y)).toEqual(Array.from({ length: 40 }, (_, i) => i + 3));
    expect(await a.s.peek('read\u0000key:1', 60_000)).toBe(42);
    expect(await b.s.peek('read\u0000key:1', 60_000)).toBe(42);
    // Another window, class or subject is another counter.
    expect(await a.s.hit('read\u0000key:1', 120_000, 60_000)).toBe(1);
    expect(await a.s.hit('write\u0000key:1', 60_000, 60_000)).toBe(1);
    expect(await a.s.peek('read\u0000key:2', 60_000)).toBe(0);
    // Nothing was counted in memory.
    expect(a.fallback.size + b.fallback.size).toBe(0);
    // A counter expires after its window (and a little slack), under the key prefix.
    const r = new Redis(MACHINE_REDIS.url);
    try {
      const ttl = await r.pttl(`${prefix}rl:60000:read\u0000key:1`);
      expect(ttl).toBeGreaterThan(55_000);
      expect(ttl).toBeLessThanOrEqual(65_000);
      await r.del(...(await r.keys(`${prefix}*`)));
    } finally {
      r.disconnect();
    }
  });

  it('counts in memory when Redis is unreachable, and says so once', async () => {
    const port = await freePort();
    const { s, changes, fallback } = make(`redis://127.0.0.1:${port}`, 'owtest:');
    const t0 = Date.now();
    await s.start(1000);
    expect(Date.now() - t0).toBeLessThan(3000);
    expect(s.isShared).toBe(false);
    expect(await s.hit('read\u0000a', 0, 60_000)).toBe(1);
    expect(await s.hit('read\u0000a', 0, 60_000)).toBe(2);
    expect(await s.peek('read\u0000a', 0)).toBe(2);
    expect(fallback.size).toBe(1);
    expect(changes.length).toBe(1);
    expect(changes[0][0]).toBe(false);
  });

  it('counts in memory at once when Redis accepts connections but never answers (a hung server)', async () => {
    const sockets: net.Socket[] = [];
    const silent = net.createServer((socket) => sockets.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    try {
      const { s, changes } = make(`redis://127.0.0.1:${(silent.address() as net.AddressInfo).port}`, 'owtest:', 100);
      const t0 = Date.now();
      await s.start(400);
      expect(Date.now() - t0).toBeLessThan(2000);
      const t1 = Date.now();
      expect(await s.hit('read\u0000a', 0, 60_000)).toBe(1);
      expect(Date.now() - t1).toBeLessThan(100);
      expect(changes).toEqual([[false, expect.any(String)]]);
    } finally {
      sockets.forEach((socket) => socket.destroy());
      await new Promise((resolve) => silent.close(resolve));
    }
  });

  withPrivateRedis('falls back when Redis stops or is slower than the timeout, and shares again once it answers', async () => {
    const redis = await startPrivateRedis(['--enable-debug-command', 'yes']);
    try {
      const { s, changes, fallback } = make(redis.url, 'owtest:', 100);
      await s.start(2000);
      expect(await s.hit('k', 0, 60_000)).toBe(1);
      expect(await s.hit('k', 0, 60_000)).toBe(2);
      // A slow Redis (the server sleeps 1.5 s): the request is counted in memory after the timeout.
      // The sleep is known to have begun when a probe's PING goes unanswered (a fixed pause raced the
      // sleeper's connection on a loaded machine).
      const sleeper = new Redis(redis.url, { maxRetriesPerRequest: 0 });
      const probe = new Redis(redis.url, { maxRetriesPerRequest: 0, commandTimeout: 150 });
      try {
        await sleeper.ping();
        await probe.ping();
        const sleeping = sleeper.call('DEBUG', 'SLEEP', '1.5');
        for (let i = 0; i < 100; i++) {
          const answered = await probe.ping().then(() => true, () => false);
          if (!answered) break;
        }
        const t0 = Date.now();
        expect(await s.hit('k', 0, 60_000)).toBe(1);
        expect(Date.now() - t0).toBeLessThan(400);
        expect(s.isShared).toBe(false);
        expect(fallback.size).toBe(1);
        await sleeping;
      } finally {
        sleeper.disconnect();
        probe.disconnect();
      }
      // Redis answers again: the shared counter goes on where Redis left it.
      let n = 0;
      for (let i = 0; i < 50 && !s.isShared; i++) {
        n = await s.hit('k', 0, 60_000);
        if (!s.isShared) await new Promise((r) => setTimeout(r, 50));
      }
      expect(s.isShared).toBe(true);
      expect(n).toBeGreaterThanOrEqual(3);
      // Redis stops: memory again, without waiting on the request path.
      await redis.stop();
      for (let i = 0; i < 50 && s.isShared; i++) await new Promise((r) => setTimeout(r, 20));
      expect(s.isShared).toBe(false);
      const t1 = Date.now();
      await s.hit('other', 0, 60_000);
      expect(Date.now() - t1).toBeLessThan(50);
      expect(changes.map(([shared]) => shared)).toEqual([true, false, true, false]);
    } finally {
      await redis.stop();
    }
  });
});
