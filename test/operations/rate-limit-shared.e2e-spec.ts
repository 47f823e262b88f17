import { randomBytes } from 'node:crypto';
import { RateLimiterService } from '../../src/platform/rate-limit/rate-limiter.service';
import { freePort, MACHINE_REDIS, redisServerSkipReason, redisSkipReason, startPrivateRedis } from '../support/redis-server';
import { createTestApp, HttpResult, TestApp } from '../support/test-app';

/**
 * Two replicas of the host (two host instances on one database) with small budgets: with a shared
 * Redis they give a client ONE budget between them; without one, or while Redis is unreachable or
 * stopped, each counts its own (the documented fallback, shown in /readyz and logged).
 */
const reason = redisSkipReason();
if (reason) process.stderr.write(`shared rate-limit test against the machine's Redis skipped: ${reason}\n`);
const withRedis = reason ? it.skip : it;
const serverReason = redisServerSkipReason();
if (serverReason) process.stderr.write(`shared rate-limit test with Redis stopped mid-way skipped: ${serverReason}\n`);
const withPrivateRedis = serverReason ? it.skip : it;

const BUDGETS = { OPENWOP_RATE_LIMIT_READ: '5/60s', OPENWOP_RATE_LIMIT_PUBLIC: '4/60s' };

let clock = Date.parse('2026-06-13T00:00:15.000Z');

/** Replica A (which owns the database) and replica B on the same database, both on the test's clock. */
async function replicas(env: Record<string, string>): Promise<[TestApp, TestApp]> {
  const a = await createTestApp({ env: { ...BUDGETS, ...env } });
  let b: TestApp;
  try {
    b = await createTestApp({ env: { ...BUDGETS, ...env }, database: a.databaseName });
  } catch (e) {
    await a.close();
    throw e;
  }
  for (const t of [a, b]) t.app.get(RateLimiterService).now = () => clock;
  return [a, b];
}

async function closeAll(...apps: Array<TestApp | undefined>): Promise<void> {
  for (const t of apps.reverse()) await t?.close();
}

function expectRateLimited(res: HttpResult, cls: string, limit: number) {
  expect(res.status).toBe(429);
  expect(res.body).toEqual({
    error: 'rate_limited',
    message: expect.any(String),
    details: { retryAfterMs: 45_000, scope: cls === 'public' ? 'global' : 'key', class: cls, limit, windowMs: 60_000 },
  });
  expect(res.headers['retry-after']).toBe('45');
}

/** /readyz of a replica, asked from an address of its own (the route is public: it has a budget too). */
async function readyz(t: TestApp, from: string) {
  const res = await t.app.inject({ method: 'GET', url: '/readyz', remoteAddress: from });
  return { status: res.statusCode, body: JSON.parse(res.body) };
}

async function until(what: string, check: () => Promise<boolean>, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const get = (t: TestApp, token: string) => t.http('GET', '/v1/goals', { token });
const discovery = (t: TestApp) => t.http('GET', '/.well-known/openwop');

describe('rate limits shared by two replicas', () => {
  // Every test starts 15 s into a fresh 60 s window: Retry-After 45.
  beforeEach(() => {
    clock += 60_000;
  });

  withRedis('with OPENWOP_REDIS_URL the two replicas give one budget: the N+1th request over both is refused', async () => {
    let a: TestApp | undefined, b: TestApp | undefined;
    try {
      [a, b] = await replicas({ OPENWOP_REDIS_URL: MACHINE_REDIS.url, OPENWOP_REDIS_KEY_PREFIX: `owtest:${randomBytes(4).toString('hex')}:` });
      const token = await a.key({ scopes: ['goals:read'] });
      const other = await b.key({ principal: 'other', scopes: ['goals:read'] });
      // 5 reads over both replicas, then the 6th is refused on either.
      for (const t of [a, b, a, b, a]) expect((await get(t, token)).status).toBe(200);
      expectRateLimited(await get(b, token), 'read', 5);
      expectRateLimited(await get(a, token), 'read', 5);
      // Another credential has its own budget.
      expect((await get(b, other)).status).toBe(200);
      // Per client address on public routes, the same.
      for (const t of [b, a, b, a]) expect((await discovery(t)).status).toBe(200);
      expectRateLimited(await discovery(a), 'public', 4);
      expectRateLimited(await discovery(b), 'public', 4);
      for (const [t, from] of [[a, '10.0.0.1'], [b, '10.0.0.2']] as const) {
        const r = await readyz(t, from);
        expect(r.status).toBe(200);
        expect(r.body.status).toBe('ok');
        expect(r.body.components['rate-limit-store']).toEqual(expect.objectContaining({ ok: true, data: { store: 'redis' } }));
        expect(t.app.get(RateLimiterService).storeKind).toBe('redis');
      }
      // The next window restores the budget, on both.
      clock += 60_000;
      expect((await get(b, token)).status).toBe(200);
    } finally {
      await closeAll(a, b);
    }
  });

  it('without a shared store each replica counts its own budget (N replicas, N budgets), as before', async () => {
    let a: TestApp | undefined, b: TestApp | undefined;
    try {
      [a, b] = await replicas({});
      const token = await a.key({ scopes: ['goals:read'] });
      for (let i = 0; i < 5; i++) expect((await get(a, token)).status).toBe(200);
      expectRateLimited(await get(a, token), 'read', 5);
      for (let i = 0; i < 5; i++) expect((await get(b, token)).status).toBe(200);
      expectRateLimited(await get(b, token), 'read', 5);
      const r = await readyz(a, '10.0.0.1');
      expect(r.body.components['rate-limit-store']).toBeUndefined();
      expect(a.app.get(RateLimiterService).storeKind).toBe('memory');
    } finally {
      await closeAll(a, b);
    }
  });

  it('with Redis unreachable the replicas start, serve, and fall back to a budget each: degraded in /readyz, logged', async () => {
    let a: TestApp | undefined, b: TestApp | undefined;
    try {
      [a, b] = await replicas({ OPENWOP_REDIS_URL: `redis://127.0.0.1:${await freePort()}` });
      const token = await a.key({ scopes: ['goals:read'] });
      for (let i = 0; i < 5; i++) expect((await get(a, token)).status).toBe(200);
      expectRateLimited(await get(a, token), 'read', 5);
      for (let i = 0; i < 5; i++) expect((await get(b, token)).status).toBe(200);
      expectRateLimited(await get(b, token), 'read', 5);
      for (const [t, from] of [[a, '10.0.0.1'], [b, '10.0.0.2']] as const) {
        const r = await readyz(t, from);
        expect(r.status).toBe(200);
        expect(r.body.status).toBe('degraded');
        expect(r.body.components['rate-limit-store']).toEqual(expect.objectContaining({ ok: false, detail: expect.stringMatching(/does not answer/), data: { store: 'memory-fallback' } }));
        expect(t.app.get(RateLimiterService).storeKind).toBe('memory-fallback');
        expect(t.logs.some((l) => /"level":"?(warn|40)"?/.test(l) && /shared Redis store does not answer/.test(l))).toBe(true);
      }
    } finally {
      await closeAll(a, b);
    }
  });

  withPrivateRedis('when Redis stops, the replicas go on with a budget each instead of refusing traffic', async () => {
    const redis = await startPrivateRedis();
    let a: TestApp | undefined, b: TestApp | undefined;
    try {
      [a, b] = await replicas({ OPENWOP_REDIS_URL: redis.url });
      const token = await a.key({ scopes: ['goals:read'] });
      for (const t of [a, a, b, b, a]) expect((await get(t, token)).status).toBe(200);
      expectRateLimited(await get(b, token), 'read', 5);
      await redis.stop();
      await until('both replicas to notice that Redis stopped', async () => (await readyz(a!, '10.0.0.1')).body.status === 'degraded' && (await readyz(b!, '10.0.0.2')).body.status === 'degraded');
      // A new window, counted per replica while Redis is down: 5 on each, then 429.
      clock += 60_000;
      for (let i = 0; i < 5; i++) expect((await get(a, token)).status).toBe(200);
      for (let i = 0; i < 5; i++) expect((await get(b, token)).status).toBe(200);
      expectRateLimited(await get(a, token), 'read', 5);
      expectRateLimited(await get(b, token), 'read', 5);
      expect((await readyz(a, '10.0.0.1')).body.components['rate-limit-store']).toEqual(expect.objectContaining({ ok: false, data: { store: 'memory-fallback' } }));
    } finally {
      await closeAll(a, b);
      await redis.stop();
    }
  });
});
