import { generateKeyPairSync } from 'node:crypto';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import jwt from 'jsonwebtoken';
import { createTestApp, TestApp } from '../support/test-app';

const SECRET = 'test-secret-for-hs256-0123456789abcdef';

describe('authentication and scopes', () => {
  let t: TestApp;
  let readKey: string;

  beforeAll(async () => {
    t = await createTestApp({ env: { OPENWOP_JWT_SECRET: SECRET, OPENWOP_JWT_ISSUER: 'https://idp.test', OPENWOP_JWT_AUDIENCE: 'openwop' } });
    readKey = await t.key({ scopes: ['runs:read'] });
  });
  afterAll(() => t.close());

  const expect401 = async (headers: Record<string, string>) => {
    const res = await t.http('GET', '/v1/runs/host/events/poll', { headers });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ error: 'unauthenticated', message: expect.any(String) });
    return res;
  };

  it('refuses a request without a credential', () => expect401({}));
  it('refuses a non-bearer scheme', () => expect401({ authorization: 'Basic dXNlcjpwYXNz' }));
  it('refuses garbage', () => expect401({ authorization: 'Bearer garbage' }));
  it('refuses an unknown key of the right shape', () =>
    expect401({ authorization: `Bearer owk_aaaaaaaaaaaa_${'A'.repeat(43)}` }));
  it('refuses a key whose secret half is wrong', () =>
    expect401({ authorization: `Bearer ${readKey.slice(0, -4)}AAAA` }));

  it('accepts a valid key', async () => {
    const res = await t.http('GET', '/v1/runs/host/events/poll', { token: readKey });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ events: [], isComplete: false, lastSequence: 0 });
  });

  it('refuses a revoked key', async () => {
    const key = await t.key({ scopes: ['runs:read', 'keys:manage'] });
    const list = await t.http('GET', '/v1/keys', { token: key });
    const mine = (list.body.keys as Array<{ id: string; prefix: string }>).find((k) => key.startsWith(k.prefix))!;
    expect((await t.http('DELETE', `/v1/keys/${mine.id}`, { token: key })).status).toBe(200);
    await expect401({ authorization: `Bearer ${key}` });
  });

  it('refuses an expired key', async () => {
    const key = await t.key({ scopes: ['runs:read'], expiresAt: new Date(Date.now() - 1000) });
    await expect401({ authorization: `Bearer ${key}` });
  });

  it('answers 403 with details.requiredScopes when a scope is missing', async () => {
    const key = await t.key({ scopes: ['tools:read'] });
    const res = await t.http('GET', '/v1/runs/host/events/poll', { token: key });
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ error: 'forbidden', message: expect.any(String), details: { requiredScopes: ['runs:read'], missingScopes: ['runs:read'] } });
  });

  it('expands roles into scopes', async () => {
    const key = await t.key({ roles: ['viewer'] });
    expect((await t.http('GET', '/v1/runs/host/events/poll', { token: key })).status).toBe(200);
  });

  describe('JWT (HS256)', () => {
    const sign = (claims: object, opts: jwt.SignOptions = {}, secret = SECRET) =>
      jwt.sign({ tenant: 'default', scope: 'runs:read', ...claims }, secret, { algorithm: 'HS256', issuer: 'https://idp.test', audience: 'openwop', subject: 'alice', expiresIn: 60, ...opts });

    it('accepts a valid token and reads tenant, principal and scopes from claims', async () => {
      const res = await t.http('GET', '/v1/runs/host/events/poll', { token: sign({}) });
      expect(res.status).toBe(200);
    });
    it('refuses a bad signature', () => expect401({ authorization: `Bearer ${sign({}, {}, 'another-secret-another-secret-xx')}` }));
    it('refuses a wrong issuer', () => expect401({ authorization: `Bearer ${sign({}, { issuer: 'https://evil.test' })}` }));
    it('refuses a wrong audience', () => expect401({ authorization: `Bearer ${sign({}, { audience: 'other' })}` }));
    it('refuses an expired token', () => expect401({ authorization: `Bearer ${sign({}, { expiresIn: -10 })}` }));
    it('refuses alg none', () => {
      const header = Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url');
      const payload = Buffer.from(
        JSON.stringify({ tenant: 'default', sub: 'alice', scope: 'runs:read', iss: 'https://idp.test', aud: 'openwop', exp: Math.floor(Date.now() / 1000) + 60 }),
      ).toString('base64url');
      return expect401({ authorization: `Bearer ${header}.${payload}.` });
    });
    it('refuses a token without a tenant claim', () => expect401({ authorization: `Bearer ${sign({ tenant: undefined })}` }));
    it('answers 403 when the token lacks the scope', async () => {
      const res = await t.http('GET', '/v1/runs/host/events/poll', { token: sign({ scope: 'tools:read' }) });
      expect(res.status).toBe(403);
    });
  });
});

describe('JWT from a JWKS (RS256)', () => {
  let t: TestApp;
  let server: http.Server;
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const other = generateKeyPairSync('rsa', { modulusLength: 2048 });

  beforeAll(async () => {
    const jwk = { ...publicKey.export({ format: 'jwk' }), kid: 'k1', use: 'sig', alg: 'RS256' };
    server = http.createServer((_, res) => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ keys: [jwk] }));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    t = await createTestApp({
      env: {
        OPENWOP_JWT_JWKS_URL: `http://127.0.0.1:${port}/jwks.json`,
        OPENWOP_JWT_ISSUER: 'https://idp.test',
        OPENWOP_JWT_AUDIENCE: 'openwop',
        OPENWOP_JWT_CLAIM_TENANT: 'org',
      },
    });
  });
  afterAll(async () => {
    await t.close();
    server.close();
  });

  const sign = (key = privateKey, kid = 'k1', alg: jwt.Algorithm = 'RS256') =>
    jwt.sign({ org: 'acme', roles: ['viewer'] }, key, { algorithm: alg, keyid: kid, issuer: 'https://idp.test', audience: 'openwop', subject: 'bob', expiresIn: 60 });

  it('accepts a token signed by the identity provider, with roles as scopes', async () => {
    expect((await t.http('GET', '/v1/runs/host/events/poll', { token: sign() })).status).toBe(200);
  });
  it('refuses a token signed by another key', async () => {
    expect((await t.http('GET', '/v1/runs/host/events/poll', { token: sign(other.privateKey) })).status).toBe(401);
  });
  it('refuses an HS256 token made with the public key as secret (algorithm confusion)', async () => {
    const pem = publicKey.export({ format: 'pem', type: 'spki' }).toString();
    const forged = jwt.sign({ org: 'acme', roles: ['admin'] }, pem, { algorithm: 'HS256', keyid: 'k1', issuer: 'https://idp.test', audience: 'openwop', subject: 'eve' });
    expect((await t.http('GET', '/v1/runs/host/events/poll', { token: forged })).status).toBe(401);
  });
});
