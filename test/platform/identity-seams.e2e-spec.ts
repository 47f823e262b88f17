/**
 * The authorization and identity seams (RFC 0048/0049): a decision for a principal of the caller's
 * tenant comes from what that principal holds now (its live keys), fails closed for a principal with
 * none (unseeded), another tenant's principal, a revoked key and a scope it lacks, and is audited; a
 * run the caller starts carries the caller's owner triple; a principal bound to another workspace
 * cannot read it (the read answers 404 not_found, as for an unknown run; the seam names it 403 run_forbidden).
 */
import { createTestApp, TestApp } from '../support/test-app';

describe('identity and authorization seams', () => {
  let t: TestApp;
  let key: string;

  beforeAll(async () => {
    t = await createTestApp({ env: { OPENWOP_TEST_SEAMS: 'true' } });
    key = await t.key({ principal: 'seam-caller', scopes: ['runs:create', 'runs:read', 'audit:read'] });
  });

  afterAll(async () => {
    await t?.close();
  });

  const decide = (principal: string, action: string, token = key) => t.http('POST', '/v1/host/sample/authorization/decide', { token, body: { principal, action, resource: 'run-probe' } });

  it('decides from the principal\'s live grants and fails closed otherwise', async () => {
    await t.key({ principal: 'seam-canceller', scopes: ['runs:cancel'] });
    await t.key({ principal: 'seam-reader', scopes: ['runs:read'] });
    await t.key({ tenant: 'seam-other-tenant', principal: 'seam-foreign', scopes: ['runs:cancel'] });
    const answers = await Promise.all([
      decide('conformance-unseeded-principal', 'runs:cancel'),
      decide('seam-canceller', 'runs:cancel'),
      decide('seam-reader', 'runs:cancel'),
      decide('seam-foreign', 'runs:cancel'),
      decide('seam-canceller', 'not a scope'),
    ]);
    expect(answers.map((a) => [a.status, a.body.allowed, a.body.reason])).toEqual([
      [200, false, 'unseeded-principal'],
      [200, true, 'granted'],
      [200, false, 'scope-missing'],
      [200, false, 'unseeded-principal'],
      [200, false, 'unknown-action'],
    ]);
    // A revoked key grants nothing.
    const revoked = await t.key({ principal: 'seam-revoked', scopes: ['runs:cancel'] });
    expect((await decide('seam-revoked', 'runs:cancel')).body.allowed).toBe(true);
    await t.ds.query(`UPDATE "api_key" SET "revoked_at" = now() WHERE "principal" = 'seam-revoked'`);
    expect((await decide('seam-revoked', 'runs:cancel')).body).toEqual(expect.objectContaining({ allowed: false, reason: 'unseeded-principal' }));
    expect(revoked).toBeTruthy();
    // Every decision is in the audit log.
    const [row] = (await t.ds.query(`SELECT count(*)::int AS "n" FROM "audit_entry" WHERE "action" = 'authorization.decided' AND "tenant" = 'default'`)) as Array<{ n: number }>;
    expect(row.n).toBe(7);
  });

  it('needs audit:read and refuses a malformed principal', async () => {
    const low = await t.key({ scopes: ['runs:read'] });
    expect((await decide('x', 'runs:cancel', low)).status).toBe(403);
    expect((await decide('bad principal/', 'runs:cancel')).status).toBe(400);
  });

  it('a run the caller starts carries its owner triple', async () => {
    const r = await t.http('GET', '/v1/host/sample/identity/owned-run', { token: key });
    expect(r.status).toBe(200);
    expect(r.body.owner).toEqual(expect.objectContaining({ tenant: 'default', principal: 'seam-caller' }));
  });

  it('a principal of another workspace reads the run as unknown (404 not_found), which the seam names 403 run_forbidden', async () => {
    const r = await t.http('POST', '/v1/host/sample/identity/cross-workspace-read', { token: key, body: {} });
    expect([r.status, r.body.error, r.body.details?.hostAnswer]).toEqual([403, 'run_forbidden', { status: 404, error: 'not_found' }]);
    // The run it started exists, in the first workspace.
    const [run] = (await t.ds.query(`SELECT "workspace" FROM "run" WHERE "principal" = 'seam-caller' AND "workspace" IS NOT NULL ORDER BY "created_at" DESC LIMIT 1`)) as Array<{ workspace: string }>;
    expect(run.workspace).toBe('seam-workspace-a');
  });
});
