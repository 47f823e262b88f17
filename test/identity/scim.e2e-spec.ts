import { startOidcProvider, OidcProvider } from '../support/oidc-provider';
import { createTestApp, TestApp } from '../support/test-app';

const USER = 'urn:ietf:params:scim:schemas:core:2.0:User';
const GROUP = 'urn:ietf:params:scim:schemas:core:2.0:Group';
const PATCH = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
const ERROR = 'urn:ietf:params:scim:api:messages:2.0:Error';
const CORP_TOKEN = 'scim-corp-token-0123456789abcdefghijklmnop';
const OTHER_TOKEN = 'scim-other-token-0123456789abcdefghijklmno';

/**
 * SCIM 2.0 provisioning end to end: users and groups created, read, filtered, patched and deleted
 * over /scim/v2 with a tenant's SCIM token; SCIM groups mapped to host roles for the user's OIDC
 * tokens (from a real OpenID provider); deactivation and deletion revoke the user's API keys and
 * refuse its tokens from then on.
 */
describe('SCIM 2.0 provisioning', () => {
  let idp: OidcProvider;
  let t: TestApp;
  const web = { id: 'openwop-console', secret: 'console-secret-0123456789abcdef', redirectUri: 'http://127.0.0.1:9/callback' };

  beforeAll(async () => {
    idp = await startOidcProvider({
      clients: [{ client_id: web.id, client_secret: web.secret, redirect_uris: [web.redirectUri], grant_types: ['authorization_code'], response_types: ['code'] }],
      accounts: { erin: { groups: [] }, frank: { groups: ['staff'] } },
    });
    t = await createTestApp({
      env: {
        OPENWOP_TEST_SEAMS: 'true',
        OPENWOP_SCIM_TOKENS: `corp=${CORP_TOKEN},other=${OTHER_TOKEN}`,
        OPENWOP_OIDC_ISSUERS: idp.issuer,
        OPENWOP_OIDC_AUDIENCE: web.id,
        OPENWOP_OIDC_DEFAULT_TENANT: 'corp',
        OPENWOP_OIDC_GROUP_ROLES: JSON.stringify({ corp: { Engineering: 'editor', staff: 'viewer' } }),
      },
    });
  }, 60_000);
  afterAll(async () => {
    await t?.close();
    await idp?.stop();
  });

  const scim = (method: string, url: string, body?: unknown, token = CORP_TOKEN) =>
    t.http(method, `/scim/v2${url}`, {
      headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { 'content-type': 'application/scim+json' } : {}) },
      ...(body !== undefined ? { rawBody: JSON.stringify(body) } : {}),
    });
  const createRun = (token: string) => t.http('POST', '/v1/runs', { token, body: { workflowId: 'conformance-noop', inputs: {} } });

  it('refuses a missing or wrong SCIM token with a SCIM 401, and a host API key is no SCIM token', async () => {
    const none = await t.http('GET', '/scim/v2/Users');
    expect(none.status).toBe(401);
    expect(none.body).toMatchObject({ schemas: [ERROR], status: '401' });
    const key = await t.key({ tenant: 'corp', roles: ['admin'] });
    expect((await scim('GET', '/Users', undefined, key)).status).toBe(401);
  });

  it('provisions a user, refuses a duplicate userName, reads and filters it; tenants are isolated', async () => {
    const created = await scim('POST', '/Users', { schemas: [USER], userName: 'erin', externalId: 'ext-erin', name: { givenName: 'Erin' }, emails: [{ value: 'erin@corp.test', primary: true }], active: true });
    expect(created.status).toBe(201);
    expect(String(created.headers['content-type'])).toContain('application/scim+json');
    expect(created.body).toMatchObject({ schemas: [USER], userName: 'erin', externalId: 'ext-erin', active: true, name: { givenName: 'Erin' }, emails: [{ value: 'erin@corp.test', primary: true }], meta: { resourceType: 'User' } });
    const dup = await scim('POST', '/Users', { schemas: [USER], userName: 'ERIN' });
    expect(dup.status).toBe(409);
    expect(dup.body).toMatchObject({ schemas: [ERROR], status: '409', scimType: 'uniqueness' });
    const got = await scim('GET', `/Users/${created.body.id}`);
    expect(got.status).toBe(200);
    expect(got.body.id).toBe(created.body.id);
    const list = await scim('GET', `/Users?filter=${encodeURIComponent('userName eq "Erin"')}`);
    expect(list.body).toMatchObject({ totalResults: 1, startIndex: 1, itemsPerPage: 1 });
    expect(list.body.Resources[0].id).toBe(created.body.id);
    const none = await scim('GET', `/Users?filter=${encodeURIComponent('userName eq "nobody"')}`);
    expect(none.body).toMatchObject({ totalResults: 0, Resources: [] });
    const bad = await scim('GET', `/Users?filter=${encodeURIComponent('emails co "corp"')}`);
    expect(bad.status).toBe(400);
    expect(bad.body.scimType).toBe('invalidFilter');
    // Another tenant's SCIM token sees nothing of corp's directory.
    expect((await scim('GET', `/Users/${created.body.id}`, undefined, OTHER_TOKEN)).status).toBe(404);
    expect((await scim('GET', '/Users', undefined, OTHER_TOKEN)).body.totalResults).toBe(0);
  });

  it('maps a SCIM group to host roles for the member\'s OIDC token; membership patched in and out', async () => {
    const erin = (await scim('GET', `/Users?filter=${encodeURIComponent('userName eq "erin"')}`)).body.Resources[0];
    const { id_token } = await idp.signIn('erin', web);
    // No groups in the token, none provisioned yet: fail closed.
    expect((await createRun(id_token)).status).toBe(403);
    const group = await scim('POST', '/Groups', { schemas: [GROUP], displayName: 'Engineering', members: [{ value: erin.id }] });
    expect(group.status).toBe(201);
    expect(group.body.members).toEqual([expect.objectContaining({ value: erin.id, display: 'erin' })]);
    expect((await createRun(id_token)).status).toBe(201);
    expect((await scim('GET', `/Users/${erin.id}`)).body.groups).toEqual([expect.objectContaining({ value: group.body.id, display: 'Engineering' })]);
    const byName = await scim('GET', `/Groups?filter=${encodeURIComponent('displayName eq "Engineering"')}`);
    expect(byName.body.totalResults).toBe(1);
    const out = await scim('PATCH', `/Groups/${group.body.id}`, { schemas: [PATCH], Operations: [{ op: 'remove', path: `members[value eq "${erin.id}"]` }] });
    expect(out.status).toBe(200);
    expect(out.body.members).toEqual([]);
    expect((await createRun(id_token)).status).toBe(403);
    const back = await scim('PATCH', `/Groups/${group.body.id}`, { schemas: [PATCH], Operations: [{ op: 'Add', path: 'members', value: [{ value: erin.id }] }] });
    expect(back.body.members).toHaveLength(1);
    expect((await createRun(id_token)).status).toBe(201);
  }, 30_000);

  it('deactivation revokes the user\'s API keys and refuses its tokens from then on; reactivation admits tokens again', async () => {
    const erin = (await scim('GET', `/Users?filter=${encodeURIComponent('userName eq "erin"')}`)).body.Resources[0];
    const key = await t.key({ tenant: 'corp', principal: 'erin', roles: ['viewer'] });
    const bystander = await t.key({ tenant: 'corp', principal: 'someone-else', roles: ['viewer'] });
    const otherTenantErin = await t.key({ tenant: 'other', principal: 'erin', roles: ['viewer'] });
    expect((await t.http('GET', '/v1/runs', { token: key })).status).toBe(200);
    const { id_token } = await idp.signIn('erin', web);
    expect((await createRun(id_token)).status).toBe(201);

    // As Entra sends it: op "Replace", a path-less value, active as a string.
    const off = await scim('PATCH', `/Users/${erin.id}`, { schemas: [PATCH], Operations: [{ op: 'Replace', value: { active: 'False' } }] });
    expect(off.status).toBe(200);
    expect(off.body.active).toBe(false);
    const refused = await t.http('GET', '/v1/runs', { token: key });
    expect(refused.status).toBe(401);
    expect(refused.body.message).toMatch(/revoked/);
    expect((await createRun(id_token)).status).toBe(401);
    expect((await t.http('GET', '/v1/runs', { token: bystander })).status).toBe(200);
    expect((await t.http('GET', '/v1/runs', { token: otherTenantErin })).status).toBe(200);

    const on = await scim('PATCH', `/Users/${erin.id}`, { schemas: [PATCH], Operations: [{ op: 'replace', path: 'active', value: true }, { op: 'replace', path: 'name.familyName', value: 'Example' }] });
    expect(on.body.active).toBe(true);
    expect(on.body.name).toEqual({ givenName: 'Erin', familyName: 'Example' });
    expect((await createRun(id_token)).status).toBe(201);
    // A revoked key stays revoked.
    expect((await t.http('GET', '/v1/runs', { token: key })).status).toBe(401);
  }, 30_000);

  it('deletion revokes keys, drops memberships, refuses tokens; the user is gone (404)', async () => {
    const frank = await scim('POST', '/Users', { schemas: [USER], userName: 'frank' });
    const key = await t.key({ tenant: 'corp', principal: 'frank', roles: ['viewer'] });
    const { id_token } = await idp.signIn('frank', web);
    expect((await t.http('GET', '/v1/runs', { token: id_token })).status).toBe(200);
    const g = await scim('POST', '/Groups', { schemas: [GROUP], displayName: 'Ops', members: [{ value: frank.body.id }] });
    expect((await scim('DELETE', `/Users/${frank.body.id}`)).status).toBe(204);
    expect((await scim('GET', `/Users/${frank.body.id}`)).status).toBe(404);
    expect((await scim('GET', `/Groups/${g.body.id}`)).body.members).toEqual([]);
    expect((await t.http('GET', '/v1/runs', { token: key })).status).toBe(401);
    expect((await t.http('GET', '/v1/runs', { token: id_token })).status).toBe(401);
    expect((await scim('DELETE', `/Groups/${g.body.id}`)).status).toBe(204);
    expect((await scim('GET', `/Groups/${g.body.id}`)).status).toBe(404);
    // Each provisioning step is in the tenant's tamper-evident audit log, the SCIM client as actor.
    const rows = (await t.ds.query(`SELECT "entry" FROM "audit_entry" WHERE "tenant" = 'corp' ORDER BY "seq"`)) as Array<{ entry: { action: string; actor: { principal: string }; details?: Record<string, unknown> } }>;
    const scimActions = rows.filter((r) => r.entry.actor.principal === 'scim').map((r) => `${r.entry.action}:${String(r.entry.details?.userName ?? r.entry.details?.keyPrincipal)}`);
    expect(scimActions).toEqual(expect.arrayContaining(['scim.user.provisioned:erin', 'scim.user.deprovisioned:erin', 'scim.user.reactivated:erin', 'key.revoked:erin', 'scim.user.provisioned:frank', 'scim.user.deprovisioned:frank', 'key.revoked:frank']));
  }, 30_000);
});
