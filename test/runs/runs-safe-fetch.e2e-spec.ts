/**
 * RFC 0076 §B `ctx.http.safeFetch`: the webhook SSRF guard applied to every form it refuses (at the first hop,
 * after a redirect, after a DNS rebinding), connection upgrades refused, time, size and redirect limits, and a
 * pack node fetching through it inside a run.
 */
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as path from 'node:path';
import { createTestApp, TestApp } from '../support/test-app';
import { installChains, waitForStatus } from './run-kit';

const plugin = path.join(__dirname, '../fixtures/plugins/safe-fetch-plugin.ts');

/** Every private, loopback, local and metadata form the webhook guard refuses (webhooks.md §Security). */
const GUARDED = [
  'http://169.254.169.254/latest/meta-data/',
  'https://169.254.169.254/',
  'https://127.0.0.1/',
  'https://127.1/',
  'https://2130706433/',
  'https://0x7f000001/',
  'https://[::1]/',
  'https://[::ffff:127.0.0.1]/',
  'https://[::ffff:7f00:1]/',
  'https://[::ffff:a9fe:a9fe]/',
  'https://[64:ff9b::a9fe:a9fe]/',
  'https://[2002:7f00:1::]/',
  'https://10.0.0.1/',
  'https://172.16.0.1/',
  'https://192.168.1.1/',
  'https://100.64.0.1/',
  'https://[fc00::1]/',
  'https://[fe80::1]/',
  'https://0.0.0.0/',
  'https://localhost/',
  'https://a.localhost/',
  'https://metadata.google.internal/',
  'https://user:pw@example.com/',
  'http://example.com/',
  'https://example.com:8080/',
];

describe('runs: ctx.http.safeFetch', () => {
  describe('under the production guard', () => {
    let t: TestApp;
    let key: string;

    beforeAll(async () => {
      t = await createTestApp({ env: { OPENWOP_TEST_SEAMS: 'true' } });
      key = await t.key({ scopes: ['runs:create', 'runs:read'] });
    });

    afterAll(async () => {
      await t?.close();
    });

    it('advertises httpClient.safeFetch', async () => {
      const d = await t.http('GET', '/.well-known/openwop');
      expect(d.body.httpClient).toMatchObject({ supported: true, ssrfGuard: true, safeFetch: { supported: true } });
    });

    it('refuses every guarded form, a rebinding and an upgrade, before connecting', async () => {
      for (const url of GUARDED) {
        const r = await t.http('POST', '/v1/host/sample/http/safe-fetch', { token: key, body: { url } });
        expect([url, r.status, r.body.outcome, r.body.blocked]).toEqual([url, 200, 'blocked', 'ssrf']);
      }
      for (const to of ['169.254.169.254', '10.1.2.3', '::1', '::ffff:127.0.0.1']) {
        const r = await t.http('POST', '/v1/host/sample/http/safe-fetch', { token: key, body: { url: 'https://example.com/', simulateRebindTo: to } });
        expect([to, r.body.outcome, r.body.blocked]).toEqual([to, 'blocked', 'ssrf']);
      }
      for (const headers of [{ Connection: 'upgrade' }, { connection: 'keep-alive, Upgrade' }, { Upgrade: 'websocket' }]) {
        const r = await t.http('POST', '/v1/host/sample/http/safe-fetch', { token: key, body: { url: 'https://example.com/', init: { headers } } });
        expect([r.body.outcome, r.body.blocked]).toEqual(['blocked', 'upgrade']);
      }
    });
  });

  describe('with local receivers allowed (OPENWOP_WEBHOOK_ALLOW_PRIVATE)', () => {
    let t: TestApp;
    let key: string;
    let server: http.Server;
    let other: http.Server;
    let base: string;

    beforeAll(async () => {
      other = http.createServer((_q, s) => s.end('other'));
      await new Promise<void>((r) => other.listen(0, '127.0.0.1', r));
      const otherPort = (other.address() as AddressInfo).port;
      server = http.createServer((q, s) => {
        if (q.url === '/ok') return s.end('hello');
        if (q.url === '/hop') return (s.writeHead(302, { location: '/ok' }), s.end());
        if (q.url === '/loop') return (s.writeHead(302, { location: '/loop' }), s.end());
        if (q.url === '/away') return (s.writeHead(302, { location: `http://127.0.0.1:${otherPort}/` }), s.end());
        if (q.url === '/big') return s.end(Buffer.alloc(2 * 1024 * 1024, 97));
        if (q.url === '/hang') return; // never answers
        s.statusCode = 404;
        s.end();
      });
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      const port = (server.address() as AddressInfo).port;
      base = `http://127.0.0.1:${port}`;
      t = await createTestApp({ env: { OPENWOP_TEST_SEAMS: 'true', OPENWOP_PLUGINS: plugin, OPENWOP_WEBHOOK_ALLOW_PRIVATE: 'true', OPENWOP_WEBHOOK_ALLOWED_PORTS: String(port) } });
      key = await t.key({ scopes: ['runs:create', 'runs:read'] });
      await installChains(t, 'default', 'vendor.test.fetch-chains', {
        'vendor.test.fetch-ok': { nodes: [{ id: 'get', typeId: 'vendor.test.fetch', config: { url: `${base}/hop` } }] },
        'vendor.test.fetch-away': { nodes: [{ id: 'get', typeId: 'vendor.test.fetch', config: { url: `${base}/away` } }] },
        'vendor.test.fetch-caught': { nodes: [{ id: 'get', typeId: 'vendor.test.fetch', config: { url: `${base}/loop`, catch: true } }] },
      });
    });

    afterAll(async () => {
      await t?.close();
      server?.closeAllConnections();
      await new Promise((r) => server?.close(r));
      await new Promise((r) => other?.close(r));
    });

    const call = (url: string, init?: Record<string, unknown>) => t.http('POST', '/v1/host/sample/http/safe-fetch', { token: key, body: { url, ...(init ? { init } : {}) } });

    it('fetches, follows a redirect, and re-checks every hop', async () => {
      expect((await call(`${base}/hop`)).body).toMatchObject({ outcome: 'fetched', status: 200, toolReturned: { status: 'ok' } });
      // The redirect leads to a port the guard does not allow: refused at that hop.
      const away = await call(`${base}/away`);
      expect([away.body.outcome, away.body.blocked]).toEqual(['blocked', 'ssrf']);
      expect(away.body.reason).toMatch(/^redirect 1: port \d+ is not an allowed port/);
      expect((await call(`${base}/hop`, { maxRedirects: 0 })).body).toMatchObject({ outcome: 'fetched', status: 302 });
      expect((await call(`${base}/loop`)).body).toMatchObject({ outcome: 'blocked', blocked: 'limit' });
    });

    it('bounds the size and the time of a call', async () => {
      expect((await call(`${base}/big`)).body).toMatchObject({ outcome: 'blocked', blocked: 'limit', reason: 'the answer is larger than 1048576 bytes' });
      expect((await call(`${base}/ok`, { maxResponseBytes: 4 })).body).toMatchObject({ outcome: 'blocked', blocked: 'limit' });
      expect((await call(`${base}/hang`, { timeoutMs: 300 })).body).toMatchObject({ outcome: 'blocked', blocked: 'limit' });
    });

    it('refuses a host outside a named connection provider\'s apiHosts (fails closed for an unknown provider)', async () => {
      expect((await call(`${base}/ok`, { connection: 'no.such.provider' })).body).toMatchObject({ outcome: 'blocked', blocked: 'allowlist' });
    });

    it('a pack node fetches through ctx.http inside a run; a refusal fails the node with safe_fetch_<refusal>', async () => {
      const ok = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.test.fetch-ok' } });
      const done = await waitForStatus(t, key, ok.body.runId, ['completed', 'failed']);
      expect(done.status).toBe('completed');
      expect(done.outputs.get).toEqual({ status: 200, body: 'hello', url: `${base}/ok`, redirects: 1 });
      const away = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.test.fetch-away' } });
      const failed = await waitForStatus(t, key, away.body.runId, ['completed', 'failed']);
      expect([failed.status, failed.error?.code]).toEqual(['failed', 'safe_fetch_ssrf']);
      const caught = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.test.fetch-caught' } });
      const c = await waitForStatus(t, key, caught.body.runId, ['completed', 'failed']);
      expect(c.outputs.get).toEqual({ refused: 'limit', code: 'safe_fetch_limit' });
    });
  });
});
