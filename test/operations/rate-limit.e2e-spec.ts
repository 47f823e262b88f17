import { loadHostConfig, parseRateBudget } from '../../src/platform/config/host-config';
import { RateLimiterService } from '../../src/platform/rate-limit/rate-limiter.service';
import { SchemaRegistry } from '../../src/platform/schemas/schema-registry';
import { createTestApp, HttpResult, TestApp } from '../support/test-app';

const envelopeOk = (body: unknown) => expect(SchemaRegistry.shared().validate('error-envelope', body)).toEqual([]);

function expectRateLimited(res: HttpResult, cls: string, scope: string) {
  expect(res.status).toBe(429);
  expect(res.body).toEqual({
    error: 'rate_limited',
    message: expect.any(String),
    details: { retryAfterMs: expect.any(Number), scope, class: cls, limit: expect.any(Number), windowMs: expect.any(Number) },
  });
  envelopeOk(res.body);
  const retryAfter = Number(res.headers['retry-after']);
  expect(Number.isInteger(retryAfter) && retryAfter >= 1).toBe(true);
  // The header (whole seconds) and details.retryAfterMs agree.
  expect(retryAfter).toBe(Math.max(1, Math.ceil(res.body.details.retryAfterMs / 1000)));
  expect(res.body.details.retryAfterMs).toBeLessThanOrEqual(res.body.details.windowMs);
}

describe('rate limiting', () => {
  let t: TestApp;
  let clock = Date.parse('2026-06-13T00:00:00.000Z');
  const advance = (ms: number) => (clock += ms);

  beforeAll(async () => {
    t = await createTestApp({
      env: {
        OPENWOP_RATE_LIMIT_READ: '5/60s',
        OPENWOP_RATE_LIMIT_WRITE: '2/60s',
        OPENWOP_RATE_LIMIT_AUTH_FAILURES: '3/60s',
        OPENWOP_RATE_LIMIT_PUBLIC: '4/60s',
      },
    });
    t.app.get(RateLimiterService).now = () => clock;
  });
  afterAll(() => t.close());
  // Every test starts in a fresh window.
  beforeEach(() => advance(60_000));

  it('gives each credential its own read budget: 429 + Retry-After past it, other credentials unaffected', async () => {
    const a = await t.key({ tenant: 'acme', principal: 'a', scopes: ['goals:read'] });
    const b = await t.key({ tenant: 'acme', principal: 'b', scopes: ['goals:read'] });
    advance(15_000);
    for (let i = 0; i < 5; i++) expect((await t.http('GET', '/v1/goals', { token: a })).status).toBe(200);
    const over = await t.http('GET', '/v1/goals', { token: a });
    expectRateLimited(over, 'read', 'key');
    // 15 s into a 60 s window: 45 s left.
    expect(over.headers['retry-after']).toBe('45');
    expect(over.body.details.retryAfterMs).toBe(45_000);
    expect((await t.http('GET', '/v1/goals', { token: b })).status).toBe(200);
    // A new window restores the budget.
    advance(45_000);
    expect((await t.http('GET', '/v1/goals', { token: a })).status).toBe(200);
  });

  it('counts writes apart from reads, and is evaluated before the scope check', async () => {
    const a = await t.key({ tenant: 'acme', principal: 'writer', scopes: ['goals:read'] });
    // goals:write is missing: 403, but each attempt still uses the write budget.
    expect((await t.http('POST', '/v1/goals', { token: a, body: {} })).status).toBe(403);
    expect((await t.http('POST', '/v1/goals', { token: a, body: {} })).status).toBe(403);
    expectRateLimited(await t.http('POST', '/v1/goals', { token: a, body: {} }), 'write', 'key');
    expect((await t.http('GET', '/v1/goals', { token: a })).status).toBe(200);
  });

  it('limits refused credentials per client address until the window ends, never a valid credential from that address', async () => {
    const good = await t.key({ tenant: 'acme', principal: 'good', scopes: ['goals:read'] });
    for (let i = 0; i < 3; i++) {
      const res = await t.http('GET', '/v1/goals', { token: `owk_nope_${i}` });
      expect(res.status).toBe(401);
    }
    expectRateLimited(await t.http('GET', '/v1/goals', { token: 'owk_nope_again' }), 'auth-failures', 'global');
    expectRateLimited(await t.http('GET', '/v1/goals'), 'auth-failures', 'global');
    // A valid credential from the same address (another client behind the same NAT or proxy) is not
    // locked out by the others' failures, however many there are.
    for (let i = 0; i < 5; i++) expect((await t.http('GET', '/v1/goals', { token: good })).status).toBe(200);
    expectRateLimited(await t.http('GET', '/v1/goals', { token: 'owk_nope_still' }), 'auth-failures', 'global');
    // Another address is not affected.
    const other = await t.app.inject({ method: 'GET', url: '/v1/goals', remoteAddress: '10.1.2.3', headers: { authorization: 'Bearer owk_nope_x' } });
    expect(other.statusCode).toBe(401);
    advance(60_000);
    expect((await t.http('GET', '/v1/goals', { token: good })).status).toBe(200);
  });

  it('limits public routes per client address', async () => {
    for (let i = 0; i < 4; i++) expect((await t.http('GET', '/.well-known/openwop')).status).toBe(200);
    expectRateLimited(await t.http('GET', '/.well-known/openwop'), 'public', 'global');
    expectRateLimited(await t.http('GET', '/healthz'), 'public', 'global');
    const other = await t.app.inject({ method: 'GET', url: '/.well-known/openwop', remoteAddress: '10.9.9.9' });
    expect(other.statusCode).toBe(200);
  });

  it('counts the refusals in the metrics', async () => {
    const monitor = await t.key({ principal: 'prometheus', roles: ['monitor'] });
    const res = await t.http('GET', '/metrics', { token: monitor });
    expect(res.text).toMatch(/^openwop_rate_limited_total\{class="read"\} [1-9]/m);
    expect(res.text).toMatch(/^openwop_http_requests_total\{method="GET",route="\/v1\/goals",status="429"\} [1-9]/m);
  });
});

describe('rate limiting disabled', () => {
  it('never answers 429 with OPENWOP_RATE_LIMIT_ENABLED=false', async () => {
    const t = await createTestApp({ env: { OPENWOP_RATE_LIMIT_ENABLED: 'false', OPENWOP_RATE_LIMIT_READ: '1/60s', OPENWOP_RATE_LIMIT_AUTH_FAILURES: '1/60s', OPENWOP_RATE_LIMIT_PUBLIC: '1/60s' } });
    try {
      const a = await t.key({ scopes: ['goals:read'] });
      for (let i = 0; i < 5; i++) {
        expect((await t.http('GET', '/v1/goals', { token: a })).status).toBe(200);
        expect((await t.http('GET', '/v1/goals', { token: 'owk_bad_key' })).status).toBe(401);
        expect((await t.http('GET', '/.well-known/openwop')).status).toBe(200);
      }
    } finally {
      await t.close();
    }
  });
});

describe('rate-limit settings', () => {
  it('parse <requests>/<window> and refuse anything else at start', () => {
    expect(parseRateBudget('X', '600/1m')).toEqual({ limit: 600, windowMs: 60_000 });
    expect(parseRateBudget('X', '20/500ms')).toEqual({ limit: 20, windowMs: 500 });
    expect(parseRateBudget('X', '1/2h')).toEqual({ limit: 1, windowMs: 7_200_000 });
    for (const bad of ['600', '600/', '/60s', '0/60s', '-1/60s', '10/60', '10/60d', '10/50ms', '10/25h', 'ten/60s', '1.5/60s']) {
      expect(() => parseRateBudget('OPENWOP_RATE_LIMIT_READ', bad)).toThrow(/OPENWOP_RATE_LIMIT_READ/);
    }
    expect(() => loadHostConfig({ OPENWOP_RATE_LIMIT_WRITE: '5 per minute' })).toThrow(/OPENWOP_RATE_LIMIT_WRITE/);
    expect(() => loadHostConfig({ OPENWOP_RATE_LIMIT_ENABLED: 'maybe' })).toThrow(/OPENWOP_RATE_LIMIT_ENABLED/);
    const defaults = loadHostConfig({}).rateLimit;
    expect(defaults.enabled).toBe(true);
    expect(defaults.budgets.read).toEqual({ limit: 6000, windowMs: 60_000 });
  });
});
