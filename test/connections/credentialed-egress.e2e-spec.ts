/**
 * RFC 0079: a connection's credential attached by the host to a safe fetch only within its audiences (the
 * provider's apiHosts), decided per hop, failing closed, each decision audited and, inside a run, recorded as the
 * content-free `egress.decided` event; the official seam `POST /v1/host/sample/egress/decide`.
 */
import { randomBytes } from 'node:crypto';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as path from 'node:path';
import { DataSource } from 'typeorm';
import { NodeHttpBinder } from '../../src/capabilities/runs/engine/node-http';
import type { EgressDecided } from '../../src/capabilities/connections';
import { createTestApp, TestApp } from '../support/test-app';
import { installChains, runEvents, waitForStatus } from '../runs/run-kit';

const plugin = path.join(__dirname, '../fixtures/plugins/credentialed-fetch-plugin.ts');
const SECRET = 'gh-secret-7f3a9c1e5b';

describe('connections: credentialed egress (RFC 0079)', () => {
  let t: TestApp;
  let server: http.Server;
  let port: number;
  const seen: Array<{ host: string; path: string; authorization?: string; apiKey?: string }> = [];
  let keyA: string;
  let keyB: string;
  let binder: NodeHttpBinder;
  const everyName = async () => [{ address: '127.0.0.1', family: 4 as const }];

  beforeAll(async () => {
    server = http.createServer((q, s) => {
      seen.push({ host: String(q.headers.host).split(':')[0], path: q.url ?? '', authorization: q.headers.authorization, apiKey: q.headers['x-api-key'] as string | undefined });
      if (q.url === '/away') return (s.writeHead(302, { location: `http://egress-b.example:${port}/steal` }), s.end());
      if (q.url === '/inside') return (s.writeHead(302, { location: `http://api.githubcopilot.com:${port}/who` }), s.end());
      s.end('ok');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
    t = await createTestApp({ env: { OPENWOP_TEST_SEAMS: 'true', OPENWOP_PLUGINS: plugin, OPENWOP_WEBHOOK_ALLOW_PRIVATE: 'true', OPENWOP_WEBHOOK_ALLOWED_PORTS: `443,${port}`, OPENWOP_CREDENTIAL_KEYS: `e1:${randomBytes(32).toString('base64')}` } });
    keyA = await t.key({ tenant: 'egress-a', scopes: ['connections:read', 'connections:manage', 'runs:create', 'runs:read'] });
    keyB = await t.key({ tenant: 'egress-b', scopes: ['connections:read', 'connections:manage', 'runs:create', 'runs:read'] });
    expect((await t.http('POST', '/v1/connections', { token: keyA, body: { provider: 'github', name: 'gh', credential: SECRET } })).status).toBe(201);
    binder = t.app.get(NodeHttpBinder);
  });

  afterAll(async () => {
    await t?.close();
    server?.closeAllConnections();
    await new Promise((r) => server?.close(r));
  });

  beforeEach(() => void seen.splice(0));

  const fetchAs = async (tenant: string, url: string, init: Record<string, unknown>) => {
    const decisions: EgressDecided[] = [];
    const outcome = await binder.fetch({ tenant }, url, init, everyName, async (d) => void decisions.push(d));
    return { outcome, decisions: decisions.map((d) => [d.decision, d.reason, d.destination]) };
  };

  it('advertises httpClient.egressPolicy', async () => {
    const d = await t.http('GET', '/.well-known/openwop');
    expect(d.body.httpClient.egressPolicy).toEqual({ supported: true, decisions: ['allowed', 'denied', 'downgraded'] });
  });

  it('attaches the credential to a host within its audiences, in the header asked for, and records the decision', async () => {
    const r = await fetchAs('egress-a', `http://api.github.com:${port}/who`, { credential: 'gh' });
    expect(r.outcome.ok).toBe(true);
    expect(r.decisions).toEqual([['allowed', 'ok', 'api.github.com']]);
    expect(seen).toEqual([{ host: 'api.github.com', path: '/who', authorization: `Bearer ${SECRET}` }]);
    seen.splice(0);
    await fetchAs('egress-a', `http://api.github.com:${port}/who`, { credential: 'gh', credentialHeader: 'X-Api-Key' });
    expect(seen).toEqual([{ host: 'api.github.com', path: '/who', apiKey: SECRET }]);
  });

  it('decides every hop again: a redirect to another audience keeps it, a redirect outside is denied before any request', async () => {
    const inside = await fetchAs('egress-a', `http://api.github.com:${port}/inside`, { credential: 'gh' });
    expect(inside.decisions).toEqual([
      ['allowed', 'ok', 'api.github.com'],
      ['allowed', 'ok', 'api.githubcopilot.com'],
    ]);
    expect(seen.map((s) => [s.host, s.authorization])).toEqual([
      ['api.github.com', `Bearer ${SECRET}`],
      ['api.githubcopilot.com', `Bearer ${SECRET}`],
    ]);
    seen.splice(0);
    const away = await fetchAs('egress-a', `http://api.github.com:${port}/away`, { credential: 'gh' });
    expect(away.outcome).toMatchObject({ ok: false, refusal: 'audience' });
    expect(away.decisions).toEqual([
      ['allowed', 'ok', 'api.github.com'],
      ['denied', 'out-of-audience', 'egress-b.example'],
    ]);
    expect(seen.map((s) => s.path)).toEqual(['/away']);
  });

  it('downgrades instead when the call allows anonymous egress: the other host gets the request without the credential', async () => {
    const away = await fetchAs('egress-a', `http://api.github.com:${port}/away`, { credential: 'gh', credentialFallback: 'anonymous' });
    expect(away.outcome.ok).toBe(true);
    expect(away.decisions).toEqual([
      ['allowed', 'ok', 'api.github.com'],
      ['downgraded', 'out-of-audience', 'egress-b.example'],
    ]);
    expect(seen.map((s) => [s.path, s.authorization])).toEqual([
      ['/away', `Bearer ${SECRET}`],
      ['/steal', undefined],
    ]);
  });

  it('fails closed: another tenant cannot name the connection, an imported one without a credential binds to nothing, the guard still rules', async () => {
    const other = await fetchAs('egress-b', `http://api.github.com:${port}/who`, { credential: 'gh' });
    expect(other.outcome).toMatchObject({ ok: false, refusal: 'audience' });
    expect(other.decisions).toEqual([['denied', 'provenance-unevaluable', 'api.github.com']]);
    // A port the guard refuses: denied as ssrf-blocked, whatever the audiences say.
    const guarded = await fetchAs('egress-a', 'http://api.github.com:1/who', { credential: 'gh' });
    expect(guarded.outcome).toMatchObject({ ok: false, refusal: 'ssrf' });
    expect(guarded.decisions).toEqual([['denied', 'ssrf-blocked', 'api.github.com']]);
    expect(seen).toEqual([]);
    for (const init of [{ credential: '' }, { credential: 'gh', credentialHeader: 'Host' }, { credential: 'gh', credentialHeader: 'bad header' }, { credential: 'gh', credentialHeader: 7 }]) {
      const r = await binder.fetch({ tenant: 'egress-a' }, `http://api.github.com:${port}/who`, init as never, everyName);
      expect(r).toMatchObject({ ok: false, refusal: 'audience' });
    }
    expect(seen).toEqual([]);
  });

  it('inside a run: egress.decided in the run log (content-free), the node failing safe_fetch_audience; the audit holds no secret', async () => {
    await installChains(t, 'egress-a', 'vendor.test.egress-chains', {
      'vendor.test.egress-out': { nodes: [{ id: 'get', typeId: 'vendor.test.credentialed-fetch', config: { url: `http://egress-b.example:${port}/v1/x?token=q`, credential: 'gh' } }] },
    });
    const run = await t.http('POST', '/v1/runs', { token: keyA, body: { workflowId: 'vendor.test.egress-out' } });
    expect(run.status).toBe(201);
    const done = await waitForStatus(t, keyA, run.body.runId, ['completed', 'failed']);
    expect([done.status, done.error?.code]).toEqual(['failed', 'safe_fetch_audience']);
    const events = await runEvents(t, keyA, run.body.runId);
    const decided = events.filter((e) => e.type === 'egress.decided');
    expect(decided).toHaveLength(1);
    expect(Object.keys(decided[0].payload).sort()).toEqual(['auditCorrelationId', 'credentialId', 'decision', 'destination', 'reason']);
    expect(decided[0].payload).toMatchObject({ decision: 'denied', reason: 'out-of-audience', destination: 'egress-b.example' });
    expect(decided[0].payload.credentialId).toMatch(/^cred:/);
    expect(JSON.stringify(events)).not.toContain(SECRET);
    const audit = (await t.app.get(DataSource).query(`SELECT "entry" FROM "audit_entry" WHERE "tenant" = 'egress-a' AND "action" = 'egress.decided'`)) as Array<{ entry: Record<string, any> }>; // eslint-disable-line @typescript-eslint/no-explicit-any
    expect(audit.some((a) => a.entry.resource?.id === run.body.runId && a.entry.details?.decision === 'denied')).toBe(true);
    expect(JSON.stringify(audit)).not.toContain(SECRET);
    // Another tenant does not see the run.
    expect((await t.http('GET', `/v1/runs/${run.body.runId}/events/poll?lastSequence=0`, { token: keyB })).status).toBe(404);
  });

  it('the seam: out-of-audience and unevaluable provenance denied, the canary never seen; its connections are gone after', async () => {
    const out = await t.http('POST', '/v1/host/sample/egress/decide', { token: keyB, body: { scenario: 'out-of-audience' } });
    expect(out.status).toBe(200);
    expect(out.body).toMatchObject({ decision: 'denied', reason: 'out-of-audience', destination: 'egress-audience-b.example', credentialAttached: false, canaryLeaked: false });
    const uneval = await t.http('POST', '/v1/host/sample/egress/decide', { token: keyB, body: { scenario: 'provenance-unevaluable' } });
    expect(uneval.body).toMatchObject({ decision: 'denied', reason: 'provenance-unevaluable', credentialAttached: false });
    const canary = await t.http('POST', '/v1/host/sample/egress/decide', { token: keyB, body: { scenario: 'canary' } });
    expect(canary.body).toMatchObject({ decision: 'denied', canaryLeaked: false, credentialAttached: false });
    for (const k of ['secret', 'credential', 'token', 'url', 'header', 'headers', 'body']) expect(canary.body).not.toHaveProperty(k);
    expect((await t.http('GET', '/v1/connections', { token: keyB })).body.connections).toEqual([]);
    expect((await t.http('GET', '/v1/connection-packs', { token: keyB })).body.packs).toEqual([]);
    expect((await t.http('POST', '/v1/host/sample/egress/decide', { token: keyB, body: { scenario: 'nope' } })).status).toBe(400);
    const reader = await t.key({ tenant: 'egress-b', scopes: ['runs:read'] });
    expect((await t.http('POST', '/v1/host/sample/egress/decide', { token: reader, body: { scenario: 'canary' } })).status).toBe(403);
  });
});
