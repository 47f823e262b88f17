/**
 * Two-key-overlap rotation (RFC 0046 §D) on the credentialed egress path (RFC 0079): a hop the provider refuses
 * (401/403) with the new credential goes once more with the credential the rotation replaced, only while its
 * overlap lasts and only to a host within the credential's audiences.
 */
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as path from 'node:path';
import { NodeHttpBinder } from '../../src/capabilities/runs/engine/node-http';
import { createTestApp, TestApp } from '../support/test-app';

const OLD = `tok-old-${randomBytes(10).toString('hex')}`;
const NEW = `tok-new-${randomBytes(10).toString('hex')}`;

describe('connections: a rotated credential on the egress path (RFC 0046 §D, RFC 0079)', () => {
  let t: TestApp;
  let server: http.Server;
  let port: number;
  let admin: string;
  let binder: NodeHttpBinder;
  /** What the provider accepts, and every authorization it was sent. */
  let accepts = OLD;
  const seen: Array<{ host: string; authorization?: string }> = [];
  const everyName = async () => [{ address: '127.0.0.1', family: 4 as const }];
  const call = (url: string) => binder.fetch({ tenant: 'rot' }, url, { credential: 'ads' }, everyName);

  beforeAll(async () => {
    server = http.createServer((q, s) => {
      seen.push({ host: String(q.headers.host).split(':')[0], authorization: q.headers.authorization });
      if (q.url === '/elsewhere') return (s.writeHead(302, { location: `http://evil.example:${port}/x` }), s.end());
      if (q.headers.authorization !== `Bearer ${accepts}`) return (s.writeHead(401), s.end('no'));
      s.end('ok');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
    t = await createTestApp({ env: { OPENWOP_WEBHOOK_ALLOW_PRIVATE: 'true', OPENWOP_WEBHOOK_ALLOWED_PORTS: `443,${port}`, OPENWOP_CREDENTIAL_KEYS: `r1:${randomBytes(32).toString('base64')}` } });
    admin = await t.key({ tenant: 'rot', scopes: ['connections:read', 'connections:manage'] });
    const pack = JSON.parse(fs.readFileSync(path.resolve(__dirname, '../fixtures/connection-packs/connection-pack-apihosts-valid.json'), 'utf8'));
    expect((await t.http('POST', '/v1/connection-packs', { token: admin, body: pack })).status).toBe(201);
    binder = t.app.get(NodeHttpBinder);
  });

  afterAll(async () => {
    await t?.close();
    server?.closeAllConnections();
    await new Promise((r) => server?.close(r));
  });

  beforeEach(() => void seen.splice(0));

  it('sends the replaced credential once when the provider refuses the new one, within the overlap only', async () => {
    const created = await t.http('POST', '/v1/connections', { token: admin, body: { provider: 'meta-ads', name: 'ads', credential: OLD } });
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    const url = `http://graph.facebook.com:${port}/me`;
    // Before any rotation: one hop, the one credential.
    let r = await call(url);
    expect(r).toMatchObject({ ok: true, response: { status: 200 } });
    expect(seen.map((s) => s.authorization)).toEqual([`Bearer ${OLD}`]);
    seen.splice(0);

    // Rotated at the host before the provider accepts the new token: the call still succeeds, with the old one.
    expect((await t.http('PUT', `/v1/connections/${id}/credential`, { token: admin, body: { credential: NEW, overlapSeconds: 1 } })).status).toBe(200);
    r = await call(url);
    expect(r).toMatchObject({ ok: true, response: { status: 200, body: 'ok' } });
    expect(seen.map((s) => s.authorization)).toEqual([`Bearer ${NEW}`, `Bearer ${OLD}`]);
    seen.splice(0);

    // The provider took the new token: one hop.
    accepts = NEW;
    r = await call(url);
    expect(r).toMatchObject({ ok: true, response: { status: 200 } });
    expect(seen.map((s) => s.authorization)).toEqual([`Bearer ${NEW}`]);
    seen.splice(0);

    // After the overlap: a refusal of the new token is the caller's answer, the old one is never sent again.
    accepts = OLD;
    await new Promise((res) => setTimeout(res, 1100));
    r = await call(url);
    expect(r).toMatchObject({ ok: true, response: { status: 401 } });
    expect(seen.map((s) => s.authorization)).toEqual([`Bearer ${NEW}`]);
  });

  it('never sends the replaced credential to a host outside the audiences', async () => {
    const id = (await t.http('GET', '/v1/connections', { token: admin })).body.connections[0].id as string;
    accepts = 'neither';
    expect((await t.http('PUT', `/v1/connections/${id}/credential`, { token: admin, body: { credential: `${NEW}-2`, overlapSeconds: 600 } })).status).toBe(200);
    const r = await call(`http://graph.facebook.com:${port}/elsewhere`);
    // The first hop redirects (no refusal there); the redirect to evil.example is decided on its own and refused.
    expect(r).toMatchObject({ ok: false, refusal: 'audience' });
    expect(seen.every((s) => s.host !== 'evil.example')).toBe(true);
    seen.splice(0);
    const refused = await call(`http://graph.facebook.com:${port}/me`);
    expect(refused).toMatchObject({ ok: true, response: { status: 401 } });
    expect(seen).toEqual([
      { host: 'graph.facebook.com', authorization: `Bearer ${NEW}-2` },
      { host: 'graph.facebook.com', authorization: `Bearer ${NEW}` },
    ]);
    expect(t.logs.filter((l) => l.includes(OLD) || l.includes(NEW))).toEqual([]);
  });
});
