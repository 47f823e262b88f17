/**
 * Identities an attacker chooses: role names an object inherits (`constructor`, `__proto__`...), JWT
 * claims PostgreSQL cannot store (NUL), a JWT without `exp` or granting more than the configured
 * lifetime. Every one is a clean 400/401, never a 500, on the API and in the CLI.
 */
import { execFile } from 'node:child_process';
import * as path from 'node:path';
import { promisify } from 'node:util';
import jwt from 'jsonwebtoken';
import { ApiKeyService } from '../../src/platform/identity/api-key.service';
import { expandRoles, roleOf } from '../../src/platform/identity/scopes';
import { createTestApp, TestApp } from '../support/test-app';

const SECRET = 'a-test-secret-of-at-least-32-chars!';
const INHERITED = ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf', 'isPrototypeOf'];
const BIN = path.join(__dirname, '..', '..', 'bin', 'openwop-host.js');

describe('hostile identities', () => {
  let t: TestApp;
  let admin: string;

  beforeAll(async () => {
    t = await createTestApp({ env: { OPENWOP_JWT_SECRET: SECRET, OPENWOP_JWT_MAX_LIFETIME_S: '3600' } });
    admin = await t.key({ roles: ['admin'] });
  });
  afterAll(() => t?.close());

  const sign = (claims: Record<string, unknown>, opts: jwt.SignOptions = { expiresIn: 60 }) =>
    jwt.sign({ tenant: 'default', scope: 'runs:read', ...claims }, SECRET, { algorithm: 'HS256', subject: 'alice', ...opts });

  it('knows no role by an inherited name', () => {
    for (const name of INHERITED) {
      expect(roleOf(name)).toBeUndefined();
      expect(expandRoles([name])).toEqual([]);
    }
    expect(roleOf('admin')).toBeDefined();
  });

  it.each(INHERITED)('POST /v1/keys with role %s answers 400 and mints nothing', async (role) => {
    const before = await t.ds.query(`SELECT count(*)::int AS n FROM "api_key"`);
    const res = await t.http('POST', '/v1/keys', { token: admin, body: { principal: 'p', roles: [role] } });
    expect([res.status, res.body.error]).toEqual([400, 'validation_error']);
    expect(await t.ds.query(`SELECT count(*)::int AS n FROM "api_key"`)).toEqual(before);
  });

  it('the CLI refuses such a role with one line and status 1', async () => {
    const env = { ...process.env, DATABASE_URL: t.config.databaseUrl!, OPENWOP_DATA_DIR: t.config.dataDir, LOG_LEVEL: 'silent' };
    await expect(promisify(execFile)(process.execPath, [BIN, 'keys', 'create', '--tenant', 'default', '--principal', 'p', '--role', 'constructor'], { env, timeout: 90_000 })).rejects.toMatchObject({
      code: 1,
      stderr: expect.stringContaining('unknown role "constructor"'),
    });
  }, 120_000);

  it('a key stored with such a role (minted before) authenticates with that role granting nothing', async () => {
    const { key, view } = await t.app.get(ApiKeyService).create({ tenant: 'default', principal: 'legacy', scopes: ['runs:read'] });
    await t.ds.query(`UPDATE "api_key" SET "roles" = $2 WHERE "id" = $1`, [view.id, INHERITED]);
    t.app.get(ApiKeyService).forgetAll();
    const who = await t.http('GET', '/v1/whoami', { token: key });
    expect(who.status).toBe(200);
    expect(who.body.scopes).toEqual(['runs:read']);
    expect((await t.http('GET', '/v1/runs', { token: key })).status).toBe(200);
  });

  it.each(INHERITED)('a JWT with role %s authenticates and that role grants nothing', async (role) => {
    const res = await t.http('GET', '/v1/whoami', { token: sign({ roles: [role, 'viewer'] }) });
    expect(res.status).toBe(200);
    expect(res.body.scopes).toEqual(expect.arrayContaining(['runs:read', 'tools:read']));
    expect(res.body.scopes).not.toContain('keys:manage');
  });

  it.each([
    ['a NUL in the tenant', { tenant: 'acme\u0000x' }],
    ['a NUL in the workspace', { workspace: 'w\u0000' }],
    ['a NUL in the principal', { sub: 'al\u0000ice' }],
    ['an empty workspace', { workspace: '' }],
    ['a workspace that is not a string', { workspace: ['w1'] }],
    ['a tenant of 129 characters', { tenant: 'a'.repeat(129) }],
    ['a tenant with a space', { tenant: 'ac me' }],
  ])('a JWT with %s answers 401', async (_label, claims) => {
    const { sub, ...rest } = claims as Record<string, unknown>;
    const token = sub !== undefined ? jwt.sign({ tenant: 'default', scope: 'runs:read', ...rest }, SECRET, { algorithm: 'HS256', subject: String(sub), expiresIn: 60 }) : sign(rest);
    for (const url of ['/v1/whoami', '/v1/runs', '/v1/goals']) {
      const res = await t.http('GET', url, { token });
      expect([url, res.status, res.body.error]).toEqual([url, 401, 'unauthenticated']);
    }
  });

  it('a JWT scope that is not name:action grants nothing and breaks nothing', async () => {
    const res = await t.http('GET', '/v1/whoami', { token: sign({ scope: 'openid profile runs:read bad\u0000scope' }) });
    expect(res.status).toBe(200);
    expect(res.body.scopes).toEqual(['runs:read']);
  });

  it('a JWT without exp answers 401 (it would never expire)', async () => {
    const token = sign({}, {});
    expect(jwt.decode(token)).not.toHaveProperty('exp');
    const res = await t.http('GET', '/v1/whoami', { token });
    expect([res.status, res.body.error]).toEqual([401, 'unauthenticated']);
  });

  it('a JWT granting more than OPENWOP_JWT_MAX_LIFETIME_S answers 401; within it, 200', async () => {
    expect((await t.http('GET', '/v1/whoami', { token: sign({}, { expiresIn: 3600 }) })).status).toBe(200);
    expect((await t.http('GET', '/v1/whoami', { token: sign({}, { expiresIn: 3601 }) })).status).toBe(401);
    // Without iat the lifetime is measured from now.
    const noIat = sign({}, { expiresIn: 7200, noTimestamp: true });
    expect(jwt.decode(noIat)).not.toHaveProperty('iat');
    expect((await t.http('GET', '/v1/whoami', { token: noIat })).status).toBe(401);
    expect((await t.http('GET', '/v1/whoami', { token: sign({}, { expiresIn: 600, noTimestamp: true }) })).status).toBe(200);
    // An iat far in the future does not stretch the window.
    const future = Math.floor(Date.now() / 1000) + 86_400;
    expect((await t.http('GET', '/v1/whoami', { token: jwt.sign({ tenant: 'default', sub: 'x', iat: future, exp: future + 60 }, SECRET, { algorithm: 'HS256' }) })).status).toBe(401);
  });

  it('refuses an invalid OPENWOP_JWT_MAX_LIFETIME_S at start', async () => {
    await expect(createTestApp({ env: { OPENWOP_JWT_MAX_LIFETIME_S: '0' } })).rejects.toThrow(/OPENWOP_JWT_MAX_LIFETIME_S/);
    await expect(createTestApp({ env: { OPENWOP_JWT_MAX_LIFETIME_S: 'a day' } })).rejects.toThrow(/OPENWOP_JWT_MAX_LIFETIME_S/);
  });
});
