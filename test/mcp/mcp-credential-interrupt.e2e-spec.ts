/**
 * The `credential` interrupt (RFC 0199 §C) and its MCP bridge (§D.2(a)-(c)), end to end against a real
 * authorization server (oidc-provider in a child process) and the official 2.x MCP client: a step needing the
 * run starter's OAuth grant suspends on a credential interrupt (connectUrl, never a token), a URL-mode client is
 * sent to the connectUrl, a form-only client gets isError, an accept retry before the grant exists is asked again,
 * and the run completes once the starter has authorized through the connectUrl (the host resolves it itself) or,
 * for a grant the host did not see arrive, on the next retry (its own re-check). Two tenants with a principal of
 * the same name never satisfy or see each other's interrupts. Also the credential mint seam.
 */
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { createTestApp, TestApp } from '../support/test-app';
import { OAuthProvider, startOAuthProvider } from '../support/oauth-provider';
import { installChains, waitForStatus } from '../runs/run-kit';

const MOUNT = '/v1/host/openwop/mcp';
const CLIENT = { id: 'openwop-host', secret: `client-secret-${randomBytes(12).toString('hex')}` };
const ORIGIN = 'https://host.example.test';
const CALLBACK = `${ORIGIN}/v1/oauth/callback`;
const PACK = JSON.parse(fs.readFileSync(path.resolve(__dirname, '../fixtures/connection-packs/connection-pack-acme-widgets.json'), 'utf8'));
PACK.engines = { openwop: '>=1.0.0 <2.0.0' };

const REPORT = {
  nodes: [
    { id: 'expose', typeId: 'core.openwop.mcp.expose-tool', config: { name: 'widget-report', inputSchema: { type: 'object', properties: {} } } },
    { id: 'connect', typeId: 'core.credential', config: { provider: 'acme-widgets', scopes: ['widget:read'] } },
  ],
  edges: [{ from: 'expose', to: 'connect' }],
};

type Any = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

describe('credential interrupts and their MCP URL-mode bridge (e2e)', () => {
  let t: TestApp;
  let idp: OAuthProvider;
  let base: string;
  /** Tenant acme: alice starts runs (no approvals:respond), bob is another principal, approver answers approvals. */
  let alice: string;
  let bob: string;
  let approver: string;
  /** Tenant beta: a principal also named alice. */
  let betaAlice: string;

  const client = async (key: string, elicitation: Record<string, unknown>): Promise<Client> => {
    const c = new Client({ name: 'credential-test', version: '1.0.0' }, { capabilities: { elicitation } as never, versionNegotiation: { mode: { pin: '2026-07-28' } }, inputRequired: { autoFulfill: false } });
    await c.connect(new StreamableHTTPClientTransport(new URL(`${base}${MOUNT}`), { requestInit: { headers: { Authorization: `Bearer ${key}` } } }));
    return c;
  };
  const call = (c: Client, extra: Record<string, unknown> = {}) => c.callTool({ name: 'widget-report', arguments: {}, ...extra } as never, { allowInputRequired: true } as never) as Promise<Any>;
  const retry = (c: Client, first: Any, key: string) => call(c, { requestState: first.requestState, inputResponses: { [key]: { action: 'accept' } } });
  /** The starter authorizes through the connectUrl: the provider URL it answers, the consent screen, the callback. */
  const authorize = async (token: string, connectUrl: string, user: string) => {
    const start = await t.http('GET', new URL(connectUrl).pathname, { token });
    expect(start.status).toBe(200);
    const back = await idp.consent(start.body.authorizationUrl, user);
    const done = await t.http('GET', `/v1/oauth/callback${back.search}`);
    expect(done.status).toBe(200);
    return done.body;
  };

  beforeAll(async () => {
    idp = await startOAuthProvider({
      clients: [{ client_id: CLIENT.id, client_secret: CLIENT.secret, redirect_uris: [CALLBACK], grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'client_secret_basic' }],
      scopes: ['widget:read', 'widget:write'],
      accounts: ['alice', 'bob'],
    });
    process.env.OPENWOP_TEST_CREDENTIAL_CLIENT_SECRET = CLIENT.secret;
    t = await createTestApp({
      env: { OPENWOP_PROTOCOL_MAJORS: '1,2', OPENWOP_TEST_SEAMS: 'true', OPENWOP_CREDENTIAL_KEYS: `k1:${randomBytes(32).toString('base64')}` },
      configFile: { connections: { oauth: { callbackUrl: CALLBACK, allowInsecureLoopback: true, clients: { 'acme-widgets': { clientId: CLIENT.id, clientSecretEnv: 'OPENWOP_TEST_CREDENTIAL_CLIENT_SECRET', issuer: idp.issuer } } } } },
    });
    for (const tenant of ['acme', 'beta']) {
      const admin = await t.key({ tenant, principal: 'admin', scopes: ['connections:read', 'connections:manage'] });
      expect((await t.http('POST', '/v1/connection-packs', { token: admin, body: PACK })).status).toBe(201);
      expect((await t.http('POST', '/v1/connections', { token: admin, body: { provider: 'acme-widgets', name: 'widgets' } })).status).toBe(201);
      await installChains(t, tenant, 'vendor.test.credential', { 'vendor.test.widget-report': REPORT });
    }
    const starter = ['tools:read', 'runs:create', 'runs:read'];
    alice = await t.key({ tenant: 'acme', principal: 'alice', scopes: starter });
    bob = await t.key({ tenant: 'acme', principal: 'bob', scopes: starter });
    approver = await t.key({ tenant: 'acme', principal: 'approver', scopes: ['runs:read', 'approvals:respond'] });
    betaAlice = await t.key({ tenant: 'beta', principal: 'alice', scopes: starter });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const addr = t.app.getHttpServer().address();
    base = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
  }, 120_000);

  afterAll(async () => {
    await t?.close();
    await idp?.stop();
    delete process.env.OPENWOP_TEST_CREDENTIAL_CLIENT_SECRET;
  });

  it('advertises oauth.credentialInterrupt in the v2 record only; the v1 document keeps its schema', async () => {
    const v2 = await t.http('GET', '/.well-known/openwop', { headers: { 'OpenWOP-Version': '2.0' } });
    expect(v2.body.oauth).toMatchObject({ credentialInterrupt: true, grants: ['authorization_code', 'refresh_token'], providers: [{ id: 'acme-widgets' }] });
    const v1 = await t.http('GET', '/.well-known/openwop');
    expect(v1.body.capabilities.oauth).toEqual({ supported: true, grants: ['authorization_code', 'refresh_token'], providers: [{ id: 'acme-widgets' }] });
  });

  it('asks in URL mode at the connectUrl, isError for a form-only client, again on an early accept, and completes once the starter authorized', async () => {
    const c = await client(alice, { url: {} });
    const formOnly = await client(alice, {});
    try {
      const first = await call(c);
      expect(first.resultType).toBe('input_required');
      const [k] = Object.keys(first.inputRequests);
      const runId = first._meta['io.openwop/runId'];
      const snapshot = await t.http('GET', `/v1/runs/${runId}`, { token: alice });
      expect(snapshot.body).toMatchObject({ status: 'waiting-input', interrupt: { kind: 'credential', nodeId: 'connect' } });
      const data = snapshot.body.interrupt.data;
      expect(data).toEqual({ provider: 'acme-widgets', scopes: ['widget:read'], reason: 'missing', connectUrl: `${ORIGIN}/v1/runs/${runId}/interrupts/connect/connect` });
      expect(first.inputRequests[k]).toEqual({ method: 'elicitation/create', params: { mode: 'url', message: expect.stringContaining('acme-widgets'), url: data.connectUrl, elicitationId: k } });
      // The v2 log the conformance suite reads carries the same connectUrl on interrupt.requested.
      const v2 = await t.http('GET', `/runs/${encodeURIComponent(`acme/${runId}`)}/events/poll?timeout=1`, { token: alice, headers: { 'OpenWOP-Version': '2.0' } });
      const requested = (v2.body.events as Any[]).find((e) => e.type === 'interrupt.requested');
      expect(requested?.payload).toMatchObject({ kind: 'credential', data: { connectUrl: data.connectUrl } });
      expect(JSON.stringify(first)).not.toContain('requestedSchema');

      // A client that declared form mode only: isError naming the provider, never a form.
      const refused = await call(formOnly);
      expect(refused.inputRequests).toBeUndefined();
      expect(refused.isError).toBe(true);
      expect(refused.content[0].text).toMatch(/acme-widgets.*out of band/);

      // Accept before any credential exists: asked again with the same URL, not an error.
      const again = await retry(c, first, k);
      expect(again.resultType).toBe('input_required');
      expect(again.inputRequests[k].params).toMatchObject({ mode: 'url', url: data.connectUrl });

      // Nobody's word resolves it: an approver's "authorized" is refused while no credential resolves.
      const early = await t.http('POST', `/v1/runs/${runId}/interrupts/connect`, { token: approver, body: { resumeValue: { outcome: 'authorized' } } });
      expect(early.status).toBe(400);
      expect(early.body).toMatchObject({ error: 'validation_error', details: { field: 'resumeValue' } });
      const smuggled = await t.http('POST', `/v1/runs/${runId}/interrupts/connect`, { token: approver, body: { resumeValue: { outcome: 'authorized', accessToken: 'x' } } });
      expect(smuggled.status).toBe(400);

      // The connectUrl is the starter's only: another principal of the tenant is refused, another tenant sees nothing.
      expect((await t.http('GET', new URL(data.connectUrl).pathname, { token: bob })).status).toBe(403);
      expect((await t.http('GET', new URL(data.connectUrl).pathname, { token: betaAlice })).status).toBe(404);
      expect((await t.http('GET', new URL(data.connectUrl).pathname)).status).toBe(401);

      // The starter authorizes; the host resolves the interrupt itself once the grant is stored.
      const grant = await authorize(alice, data.connectUrl, 'alice');
      expect(grant).toMatchObject({ provider: 'acme-widgets', principal: 'alice', scopes: expect.arrayContaining(['widget:read']) });
      const done = await waitForStatus(t, alice, runId, ['completed', 'failed']);
      expect(done.status).toBe('completed');
      const events = await t.http('GET', `/v1/runs/${runId}/events/poll?lastSequence=0`, { token: alice });
      const resolved = (events.body.events as Any[]).find((e) => e.type === 'interrupt.resolved');
      expect(resolved?.payload).toMatchObject({ kind: 'credential' });
      expect(JSON.stringify(events.body)).not.toMatch(/access_token|code_verifier/);

      // The retry with the same state now answers the result; the output names the credential by reference only.
      const result = await retry(c, again, k);
      expect(result).toMatchObject({ isError: false, structuredContent: { provider: 'acme-widgets', credentialRef: grant.credentialRef } });

      // A starter holding the credential is never asked.
      const direct = await call(c);
      expect(direct).toMatchObject({ isError: false, structuredContent: { provider: 'acme-widgets', credentialRef: grant.credentialRef } });
    } finally {
      await c.close();
      await formOnly.close();
    }
  });

  it("keeps tenants apart: acme alice's grant does not satisfy beta's alice, and a retry re-checks a grant the host did not see arrive", async () => {
    const c = await client(betaAlice, { form: {}, url: {} });
    try {
      const first = await call(c);
      expect(first.resultType).toBe('input_required');
      const [k] = Object.keys(first.inputRequests);
      const runId = first._meta['io.openwop/runId'];
      // acme cannot see or connect beta's run.
      expect((await t.http('GET', `/v1/runs/${runId}`, { token: alice })).status).toBe(404);
      const connectPath = new URL(first.inputRequests[k].params.url).pathname;
      expect((await t.http('GET', connectPath, { token: alice })).status).toBe(404);

      // A grant stored without the host's notice (written straight to the table, as another replica's commit
      // would be without a notification): the accept retry re-checks and resolves.
      const again = await retry(c, first, k);
      expect(again.resultType).toBe('input_required');
      const [acmeGrant] = (await t.ds.query(`SELECT "credential_id", "scopes" FROM "oauth_grant" WHERE "tenant" = 'acme' AND "principal" = 'alice'`)) as Array<{ credential_id: string; scopes: string[] }>;
      const [conn] = (await t.ds.query(`SELECT "id" FROM "connection" WHERE "tenant" = 'beta'`)) as Array<{ id: string }>;
      await t.ds.query(`INSERT INTO "oauth_grant" ("tenant", "connection_id", "principal", "credential_id", "scopes", "status") VALUES ('beta', $1, 'alice', $2, $3, 'active')`, [conn.id, acmeGrant.credential_id, acmeGrant.scopes]);
      const done = await retry(c, again, k);
      expect(done).toMatchObject({ isError: false, structuredContent: { provider: 'acme-widgets' } });
    } finally {
      await c.close();
    }
  });

  it('declining fails the step with connector_auth_declined', async () => {
    const c = await client(bob, { url: {} });
    try {
      const first = await call(c);
      const runId = first._meta['io.openwop/runId'];
      const r = await t.http('POST', `/v1/runs/${runId}/interrupts/connect`, { token: approver, body: { resumeValue: { outcome: 'declined' } } });
      expect(r.status).toBe(200);
      const done = await waitForStatus(t, bob, runId, ['completed', 'failed']);
      expect(done).toMatchObject({ status: 'failed', error: { code: 'connector_auth_declined' } });
    } finally {
      await c.close();
    }
  });

  it("mints a fresh principal's short-lived key with the caller's run and tool-listing scopes only, in the caller's tenant", async () => {
    const caller = await t.key({ tenant: 'acme', principal: 'suite', scopes: ['runs:create', 'runs:read', 'approvals:respond', 'tools:read'] });
    const seam = '/conformance/seams/sample/auth/credential/mint';
    const minted = await t.http('POST', seam, { token: caller, body: { lane: 'api-key' }, headers: { 'OpenWOP-Version': '2.0' } });
    expect(minted.status).toBe(201);
    expect(minted.body).toMatchObject({ lane: 'api-key', scopes: ['runs:create', 'runs:read', 'tools:read'] });
    expect(Date.parse(minted.body.expiresAt) - Date.now()).toBeLessThanOrEqual(15 * 60_000);
    const who = await t.http('GET', '/v1/whoami', { token: minted.body.credential });
    expect(who.body).toMatchObject({ tenant: 'acme', principal: minted.body.subjectId });
    expect(who.body.principal).not.toBe('suite');
    const second = await t.http('POST', '/v1/host/sample/auth/credential/mint', { token: caller, body: { lane: 'api-key' } });
    expect(second.body.subjectId).not.toBe(minted.body.subjectId);
    // Never approvals:respond: the minted key cannot answer an interrupt.
    expect((await t.http('POST', '/v1/approvals/00000000-0000-4000-8000-000000000000/resolve', { token: minted.body.credential, body: { resumeValue: {} } })).status).toBe(403);

    const readOnly = await t.key({ tenant: 'acme', principal: 'reader', scopes: ['runs:read'] });
    expect((await t.http('POST', '/v1/host/sample/auth/credential/mint', { token: readOnly, body: { lane: 'api-key' } })).body.scopes).toEqual(['runs:read']);
    const none = await t.key({ tenant: 'acme', principal: 'connector', scopes: ['connections:read'] });
    expect((await t.http('POST', '/v1/host/sample/auth/credential/mint', { token: none, body: { lane: 'api-key' } })).status).toBe(403);
    const bad = await t.http('POST', '/v1/host/sample/auth/credential/mint', { token: caller, body: { lane: 'oauth2' } });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toBe('validation_error');
    expect((await t.http('POST', '/v1/host/sample/auth/credential/mint', { body: { lane: 'api-key' } })).status).toBe(401);
  });
});
