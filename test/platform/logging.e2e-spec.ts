import { Writable } from 'node:stream';
import { createLogger } from '../../src/platform/logging/logger';
import { parseJsonStrict } from '../support/strict-json';
import { createTestApp, TestApp } from '../support/test-app';

type Line = Record<string, unknown>;

describe('logs', () => {
  let t: TestApp;
  let key: string;
  const parsed = (): Line[] => t.logs.map((l) => parseJsonStrict(l) as Line);

  beforeAll(async () => {
    t = await createTestApp({ env: { LOG_LEVEL: 'debug' } });
    key = await t.key({ tenant: 'acme', principal: 'alice', scopes: ['runs:read', 'keys:manage'] });
  });
  afterAll(() => t.close());

  it('the duplicate-key check can fail', () => {
    expect(() => parseJsonStrict('{"msg":"a","b":{"c":1,"c":2}}')).toThrow(/duplicate key "c"/);
    expect(() => parseJsonStrict('{"msg":"a","x":[{"msg":1},{"msg":2}],"y":"\\"msg\\""}')).not.toThrow();
  });

  it('writes every start-up line as JSON with each key once, route mapping at debug', () => {
    const lines = parsed(); // throws on a duplicate key
    expect(lines.length).toBeGreaterThan(20);
    const mapped = lines.filter((l) => typeof l.msg === 'string' && /^Mapped \{/.test(l.msg));
    expect(mapped.length).toBeGreaterThan(20);
    expect(mapped.every((l) => l.level === 'debug')).toBe(true);
    const sources = lines.find((l) => l.msg === 'tool sources registered');
    expect(sources).toBeDefined();
    expect(Array.isArray(sources!.sources)).toBe(true);
    expect(lines.filter((l) => l.level === 'info' && /^Mapped|dependencies initialized$/.test(String(l.msg)))).toEqual([]);
  });

  it('logs each request once with tenant, principal, route, status and duration, never the credential', async () => {
    const bogus = 'owk_aaaaaaaaaaaa_notARealSecretButSecretLooking0123456789';
    const from = t.logs.length;
    const ok = await t.http('GET', '/v1/runs/host/events/poll?lastSequence=0', { token: key, headers: { 'x-request-id': 'req-ok-1' } });
    expect(ok.status).toBe(200);
    const refused = await t.http('GET', '/v1/runs/host/events/poll', { token: bogus, headers: { 'x-request-id': 'req-401-1' } });
    expect(refused.status).toBe(401);
    const created = await t.http('POST', '/v1/keys', { token: key, body: { principal: 'bot', scopes: ['runs:read'], name: 'password hunter2-not-logged' }, headers: { 'x-request-id': 'req-201-1' } });
    expect(created.status).toBe(201);
    // The line is written in onResponse, just after the answer went out.
    for (let i = 0; i < 100 && !t.logs.slice(from).some((l) => l.includes('"reqId":"req-201-1"') && l.includes('request completed')); i++) {
      await new Promise((r) => setTimeout(r, 20));
    }
    const lines = t.logs.slice(from).map((l) => parseJsonStrict(l) as Line);
    const done = (id: string) => lines.filter((l) => l.reqId === id && l.msg === 'request completed');
    expect(done('req-ok-1')).toEqual([
      expect.objectContaining({ level: 'info', method: 'GET', route: '/v1/runs/:runId/events/poll', status: 200, tenant: 'acme', principal: 'alice', credential: 'api-key', durationMs: expect.any(Number) }),
    ]);
    expect(done('req-401-1')).toEqual([expect.objectContaining({ status: 401, tenant: null, principal: null, route: '/v1/runs/:runId/events/poll' })]);
    expect(done('req-201-1')).toEqual([expect.objectContaining({ status: 201, tenant: 'acme', principal: 'alice', route: '/v1/keys' })]);
    const text = t.logs.join('\n');
    // A key is owk_<12-char lookup>_<43-char secret>; the secret itself may contain '_'.
    for (const secret of [key, key.slice(-43), bogus, 'notARealSecret', 'hunter2', created.body.key, 'Bearer ']) {
      expect(text).not.toContain(secret);
    }
  });

  it('logs health probes at debug, every other request at info', async () => {
    const from = t.logs.length;
    for (const [url, id] of [['/healthz', 'req-probe-live'], ['/readyz', 'req-probe-ready'], ['/.well-known/openwop', 'req-discovery']]) {
      expect((await t.http('GET', url, { headers: { 'x-request-id': id } })).status).toBe(200);
    }
    for (let i = 0; i < 100 && !t.logs.slice(from).some((l) => l.includes('"reqId":"req-discovery"') && l.includes('request completed')); i++) {
      await new Promise((r) => setTimeout(r, 20));
    }
    const lines = t.logs.slice(from).map((l) => parseJsonStrict(l) as Line).filter((l) => l.msg === 'request completed');
    const levelOf = (id: string) => lines.filter((l) => l.reqId === id).map((l) => [l.route, l.level]);
    expect(levelOf('req-probe-live')).toEqual([['/healthz', 'debug']]);
    expect(levelOf('req-probe-ready')).toEqual([['/readyz', 'debug']]);
    expect(levelOf('req-discovery')).toEqual([['/.well-known/openwop', 'info']]);
  });

  it('writes a message passed inside the object once, and renames fields clashing with the line keys', () => {
    const out: string[] = [];
    const log = createLogger('info', new Writable({ write: (c, _e, cb) => (out.push(String(c)), cb()) })).child({ reqId: 'r1' });
    log.info({ msg: 'inside', level: 'x', reqId: 'r2', time: 1, service: 's' }, '');
    log.info({ msg: 'extra', a: 1 }, 'given');
    const [a, b] = out.map((l) => parseJsonStrict(l) as Line);
    expect(a).toEqual(expect.objectContaining({ msg: 'inside', level: 'info', reqId: 'r1', reqId_: 'r2', level_: 'x', time_: 1, service_: 's' }));
    expect(b).toEqual(expect.objectContaining({ msg: 'given', detail: 'extra', a: 1 }));
  });

  it('renames only fields a binding of the line holds at its top level, whatever the bindings nest or escape', () => {
    const out: string[] = [];
    const root = createLogger('info', new Writable({ write: (c, _e, cb) => (out.push(String(c)), cb()) }));
    // A nested binding writes `"tenant":` into the child's bindings text without binding `tenant` itself.
    const child = root.child({ ctx: { tenant: 'nested' }, 'we"ird': 1 }).child({ reqId: 'r1' });
    child.info({ msg: 'line', tenant: 't', 'we"ird': 2, reqId: 'r2', service: 's' });
    const [line] = out.map((l) => parseJsonStrict(l) as Line);
    expect(line).toEqual(expect.objectContaining({ msg: 'line', tenant: 't', ctx: { tenant: 'nested' }, 'we"ird': 1, 'we"ird_': 2, reqId: 'r1', reqId_: 'r2', service: 'openwop-host', service_: 's' }));
    expect(Object.keys(line)).not.toContain('tenant_');
  });
});
