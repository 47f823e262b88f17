import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { connectionsRetirePrevious, connectionsRotateCredential } from '../../src/cli/connections.cli';
import { sink } from '../support/sink';
import { createTestApp, TestApp } from '../support/test-app';
import { ConnectionsService, CredentialRejectedError } from '../../src/capabilities/connections/connections/connections.service';

const KEY = randomBytes(32).toString('base64');
const OLD = `sk-old-${randomBytes(12).toString('hex')}`;
const NEW = `sk-new-${randomBytes(12).toString('hex')}`;
const NEWER = `sk-newer-${randomBytes(12).toString('hex')}`;
const HOST = 'graph.facebook.com';

/**
 * Two-key-overlap rotation of connection credentials (RFC 0046 §D): after a rotation the replaced
 * credential is still offered while its overlap lasts (when the provider refuses the new one), and
 * never after; an ended overlap is swept from the store; nothing ever echoes either value.
 */
describe('connection credential rotation: two-key overlap (RFC 0046 §D)', () => {
  let t: TestApp;
  let admin: string;
  let reader: string;
  let other: string;
  let svc: ConnectionsService;
  const bodies: string[] = [];
  const http = async (method: string, url: string, opts: { token?: string; body?: unknown } = {}) => {
    const r = await t.http(method, url, opts);
    bodies.push(r.text);
    return r;
  };
  /** A provider that accepts only `accepted`: what each call was handed, in order. */
  const provider = (accepted: string) => {
    const handed: string[] = [];
    const call = async (c: string) => {
      handed.push(c);
      if (c !== accepted) throw new CredentialRejectedError();
      return 'ok';
    };
    return { handed, call };
  };
  const credentialRows = async () => ((await t.ds.query(`SELECT count(*)::int AS n FROM "credential" WHERE "tenant" = 'acme'`)) as Array<{ n: number }>)[0].n;
  const create = async (name: string, credential: string) => {
    const r = await http('POST', '/v1/connections', { token: admin, body: { provider: 'meta-ads', name, credential } });
    expect(r.status).toBe(201);
    return r.body.id as string;
  };

  beforeAll(async () => {
    t = await createTestApp({ env: { OPENWOP_CREDENTIAL_KEYS: `k1:${KEY}` } });
    admin = await t.key({ tenant: 'acme', principal: 'alice', scopes: ['connections:read', 'connections:manage'] });
    reader = await t.key({ tenant: 'acme', principal: 'bob', scopes: ['connections:read'] });
    other = await t.key({ tenant: 'globex', principal: 'eve', scopes: ['connections:read', 'connections:manage'] });
    svc = t.moduleRef.get(ConnectionsService);
    // The meta-ads provider (apiHosts facebook.com) from the connection-pack fixture.
    const pack = JSON.parse(fs.readFileSync(path.resolve(__dirname, '../fixtures/connection-packs/connection-pack-apihosts-valid.json'), 'utf8'));
    expect((await t.http('POST', '/v1/connection-packs', { token: admin, body: pack })).status).toBe(201);
  });

  afterAll(async () => {
    await t?.close();
  });

  it('advertises rotation "two-key-overlap"', async () => {
    const r = await http('GET', '/.well-known/openwop');
    expect(r.body.credentials).toMatchObject({ supported: true, rotation: 'two-key-overlap' });
  });

  it('keeps the replaced credential working within the overlap, the reference unchanged, nothing echoed', async () => {
    const id = await create('ads-a', OLD);
    const before = (await http('GET', `/v1/connections/${id}`, { token: reader })).body;
    expect(before.previousCredentialExpiresAt).toBeNull();
    const r = await http('PUT', `/v1/connections/${id}/credential`, { token: admin, body: { credential: NEW, overlapSeconds: 3600 } });
    expect(r.status).toBe(200);
    expect(r.body.credentialRef).toBe(before.credentialRef);
    const ends = Date.parse(r.body.previousCredentialExpiresAt);
    expect(ends - Date.now()).toBeGreaterThan(3590_000);
    expect(ends - Date.now()).toBeLessThanOrEqual(3600_000);
    // The new credential is handed first; the old one only when the provider refuses the new.
    const accepting = provider(NEW);
    await expect(svc.withCredential({ tenant: 'acme' }, id, HOST, accepting.call)).resolves.toBe('ok');
    expect(accepting.handed).toEqual([NEW]);
    const notYet = provider(OLD);
    await expect(svc.withCredential({ tenant: 'acme' }, id, HOST, notYet.call)).resolves.toBe('ok');
    expect(notYet.handed).toEqual([NEW, OLD]);
    // Another failure is not a refusal: no second attempt.
    const handed: string[] = [];
    await expect(svc.withCredential({ tenant: 'acme' }, id, HOST, async (c) => { handed.push(c); throw new Error('network down'); })).rejects.toThrow('network down');
    expect(handed).toEqual([NEW]);
    // Another tenant cannot reach either.
    await expect(svc.withCredential({ tenant: 'globex' }, id, HOST, notYet.call)).rejects.toMatchObject({ status: 404 });
    const events = (await t.ds.query(`SELECT "type", "payload" FROM "event" WHERE "stream_key" IN (SELECT "key" FROM "event_stream" WHERE "tenant" = 'acme') AND "type" = 'connection.credential_rotated'`)) as Array<{ payload: Record<string, unknown> }>;
    expect(events.map((e) => e.payload)).toEqual([{ connectionId: id, provider: 'meta-ads', credentialRef: before.credentialRef, overlapSeconds: 3600, previousCredentialExpiresAt: r.body.previousCredentialExpiresAt }]);
    const audit = (await t.ds.query(`SELECT "entry" FROM "audit_entry" WHERE "tenant" = 'acme' AND "entry"->>'action' = 'connection.credential-rotated'`)) as Array<{ entry: Record<string, any> }>;
    expect(audit.map((a) => a.entry.details)).toEqual([{ provider: 'meta-ads', overlapSeconds: 3600, overlapEndsAt: r.body.previousCredentialExpiresAt }]);
    expect(audit[0].entry.actor).toMatchObject({ principal: 'alice' });
  });

  it('stops offering the replaced credential when the overlap ends, and the sweep deletes it', async () => {
    const id = await create('ads-b', OLD);
    const rows = await credentialRows();
    const r = await http('PUT', `/v1/connections/${id}/credential`, { token: admin, body: { credential: NEW, overlapSeconds: 1 } });
    expect(r.status).toBe(200);
    expect(await credentialRows()).toBe(rows + 1);
    const within = provider(OLD);
    await expect(svc.withCredential({ tenant: 'acme' }, id, HOST, within.call)).resolves.toBe('ok');
    await new Promise((res) => setTimeout(res, 1100));
    const after = provider(OLD);
    await expect(svc.withCredential({ tenant: 'acme' }, id, HOST, after.call)).rejects.toBeInstanceOf(CredentialRejectedError);
    expect(after.handed).toEqual([NEW]);
    expect((await http('GET', `/v1/connections/${id}`, { token: reader })).body.previousCredentialExpiresAt).toBeNull();
    expect(await svc.retireExpiredOverlaps(100)).toBeGreaterThanOrEqual(1);
    expect(await credentialRows()).toBe(rows);
    const retired = (await t.ds.query(`SELECT "payload" FROM "event" WHERE "stream_key" IN (SELECT "key" FROM "event_stream" WHERE "tenant" = 'acme') AND "type" = 'connection.credential_retired'`)) as Array<{ payload: Record<string, unknown> }>;
    expect(retired.map((e) => e.payload)).toContainEqual({ connectionId: id, provider: 'meta-ads', reason: 'expired' });
    // The new credential keeps working.
    await expect(svc.withCredential({ tenant: 'acme' }, id, HOST, provider(NEW).call)).resolves.toBe('ok');
  });

  it('overlapSeconds 0 replaces at once; a rotation during an overlap retires the older credential', async () => {
    const id = await create('ads-c', OLD);
    const zero = await http('PUT', `/v1/connections/${id}/credential`, { token: admin, body: { credential: NEW, overlapSeconds: 0 } });
    expect(zero.body.previousCredentialExpiresAt).toBeNull();
    await expect(svc.withCredential({ tenant: 'acme' }, id, HOST, provider(OLD).call)).rejects.toBeInstanceOf(CredentialRejectedError);
    const rows = await credentialRows();
    await http('PUT', `/v1/connections/${id}/credential`, { token: admin, body: { credential: NEWER, overlapSeconds: 600 } });
    await http('PUT', `/v1/connections/${id}/credential`, { token: admin, body: { credential: OLD, overlapSeconds: 600 } });
    // Two rotations, one replaced credential kept: NEWER (the one just replaced), never NEW.
    expect(await credentialRows()).toBe(rows + 1);
    const p = provider(NEWER);
    await expect(svc.withCredential({ tenant: 'acme' }, id, HOST, p.call)).resolves.toBe('ok');
    expect(p.handed).toEqual([OLD, NEWER]);
    await expect(svc.withCredential({ tenant: 'acme' }, id, HOST, provider(NEW).call)).rejects.toBeInstanceOf(CredentialRejectedError);
  });

  it('ends an overlap on request (DELETE .../credential/previous): 404 without one, 403 without manage, 404 across tenants', async () => {
    const id = await create('ads-d', OLD);
    expect((await http('DELETE', `/v1/connections/${id}/credential/previous`, { token: admin })).status).toBe(404);
    await http('PUT', `/v1/connections/${id}/credential`, { token: admin, body: { credential: NEW } });
    const view = (await http('GET', `/v1/connections/${id}`, { token: reader })).body;
    // The default overlap: connections.credentialOverlapSeconds, one day.
    expect(Date.parse(view.previousCredentialExpiresAt) - Date.now()).toBeGreaterThan(86_390_000);
    expect((await http('DELETE', `/v1/connections/${id}/credential/previous`, { token: reader })).status).toBe(403);
    const cross = await http('DELETE', `/v1/connections/${id}/credential/previous`, { token: other });
    expect(cross.status).toBe(404);
    expect(cross.body.error).toBe('not_found');
    const rows = await credentialRows();
    const done = await http('DELETE', `/v1/connections/${id}/credential/previous`, { token: admin });
    expect(done.status).toBe(200);
    expect(done.body.previousCredentialExpiresAt).toBeNull();
    expect(await credentialRows()).toBe(rows - 1);
    await expect(svc.withCredential({ tenant: 'acme' }, id, HOST, provider(OLD).call)).rejects.toBeInstanceOf(CredentialRejectedError);
    expect((await http('DELETE', `/v1/connections/${id}/credential/previous`, { token: admin })).status).toBe(404);
    const retired = (await t.ds.query(`SELECT "payload" FROM "event" WHERE "stream_key" IN (SELECT "key" FROM "event_stream" WHERE "tenant" = 'acme') AND "type" = 'connection.credential_retired'`)) as Array<{ payload: Record<string, unknown> }>;
    expect(retired.map((e) => e.payload)).toContainEqual({ connectionId: id, provider: 'meta-ads', reason: 'revoked' });
    // Deleting a connection in its overlap deletes both credentials.
    await http('PUT', `/v1/connections/${id}/credential`, { token: admin, body: { credential: NEWER } });
    const before = await credentialRows();
    expect((await http('DELETE', `/v1/connections/${id}`, { token: admin })).status).toBe(204);
    expect(await credentialRows()).toBe(before - 2);
  });

  it('refuses a malformed overlapSeconds with 400 validation_error', async () => {
    const id = await create('ads-e', OLD);
    for (const overlapSeconds of [-1, 1.5, '60', 2_592_001, null]) {
      const r = await http('PUT', `/v1/connections/${id}/credential`, { token: admin, body: { credential: NEW, overlapSeconds } });
      expect({ overlapSeconds, status: r.status, error: r.body.error }).toEqual({ overlapSeconds, status: 400, error: 'validation_error' });
    }
  });

  it('the CLI rotates from a file (never from the command line) and ends the overlap, printing neither value', async () => {
    const id = await create('ads-cli', OLD);
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const url = `http://127.0.0.1:${(t.app.getHttpServer().address() as { port: number }).port}`;
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'rotate-cli-')), 'credential');
    fs.writeFileSync(file, `${NEW}\n`);
    const rotate = { url, key: admin, out: sink(), err: sink() };
    expect(await connectionsRotateCredential(rotate, id, { credentialFile: file, overlapSeconds: '120' })).toBe(0);
    expect(rotate.out.text()).toMatch(/still offered until \d{4}-/);
    // The trailing newline of the file is not part of the credential.
    await expect(svc.withCredential({ tenant: 'acme' }, id, HOST, provider(NEW).call)).resolves.toBe('ok');
    await expect(svc.withCredential({ tenant: 'acme' }, id, HOST, provider(OLD).call)).resolves.toBe('ok');
    const bad = { url, key: admin, out: sink(), err: sink() };
    expect(await connectionsRotateCredential(bad, id, { credentialFile: file, overlapSeconds: '-5' })).toBe(1);
    expect(bad.err.text()).toBe('--overlap-seconds must be a whole number of seconds\n');
    const retire = { url, key: admin, out: sink(), err: sink() };
    expect(await connectionsRetirePrevious(retire, id, {})).toBe(0);
    expect(retire.out.text()).toContain('no replaced credential is offered');
    await expect(connectionsRetirePrevious({ ...retire, out: sink() }, id, {})).rejects.toThrow(/404 not_found/);
    for (const o of [rotate, bad, retire]) for (const secret of [OLD, NEW]) expect(o.out.text() + o.err.text()).not.toContain(secret);
  });

  it('never wrote a credential value into a response, an event, the audit log or a log line', async () => {
    const events = JSON.stringify(await t.ds.query(`SELECT "payload" FROM "event"`));
    const audit = JSON.stringify(await t.ds.query(`SELECT "entry" FROM "audit_entry"`));
    for (const secret of [OLD, NEW, NEWER]) {
      expect(bodies.filter((b) => b.includes(secret))).toEqual([]);
      expect(t.logs.filter((l) => l.includes(secret))).toEqual([]);
      expect(events).not.toContain(secret);
      expect(audit).not.toContain(secret);
    }
  });
});
