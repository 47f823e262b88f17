/**
 * What the official `credential-payload-redaction` scenario (RFC 0046 §C.1, SECURITY invariant
 * `credential-payload-redaction`) asserts, read the way it reads: the `credentials` block under the
 * deprecated `capabilities` wrapper of discovery, then `POST /v1/host/sample/credentials/echo
 * {canary}` (status < 400) whose whole serialized answer must not contain the canary. Where the
 * official scenario soft-skips (block absent, 404) this test fails: the host must serve both.
 * Beyond the scenario: the canary is absent from the event log, the logs and the database after
 * the probe, and the probe's credential reference does resolve to a stored credential meanwhile.
 */
import { randomBytes } from 'node:crypto';
import { SchemaRegistry } from '../../src/platform/schemas/schema-registry';
import { createTestApp, TestApp } from '../support/test-app';

const CANARY = 'OPENWOP_CRED_CANARY_4f1c8a2e9b';

describe('conformance: credential-payload-redaction', () => {
  let t: TestApp;
  let key: string;

  beforeAll(async () => {
    t = await createTestApp({ env: { OPENWOP_TEST_SEAMS: 'true', OPENWOP_CREDENTIAL_KEYS: `k1:${randomBytes(32).toString('base64')}` } });
    key = await t.key({ tenant: 'conformance', principal: 'conformance-suite', roles: ['admin'] });
  });
  afterAll(async () => {
    await t?.close();
  });

  async function readCredentials(): Promise<{ supported?: boolean } | null> {
    const res = await t.http('GET', '/.well-known/openwop');
    return res.body?.capabilities?.credentials ?? null;
  }

  it('advertises capabilities.credentials.supported as a boolean (mirrored from the root, schema-valid)', async () => {
    const cred = await readCredentials();
    expect(cred).not.toBeNull();
    expect(typeof cred!.supported).toBe('boolean');
    expect(cred!.supported).toBe(true);
    const doc = await t.http('GET', '/.well-known/openwop');
    expect(doc.body.capabilities.credentials).toEqual(doc.body.credentials);
    expect(SchemaRegistry.shared().validate('capabilities', doc.body)).toEqual([]);
  });

  it('the canary plaintext is absent from every observable surface of the echo run', async () => {
    expect((await readCredentials())?.supported).toBe(true);
    const res = await t.http('POST', '/v1/host/sample/credentials/echo', { token: key, body: { canary: CANARY } });
    expect(res.status).toBeLessThan(400);
    expect(JSON.stringify(res.body ?? {}).includes(CANARY)).toBe(false);
    expect(res.text).not.toContain(CANARY);

    // Not vacuous: the node resolved the seeded credential and echoed it, redacted to its reference.
    expect(res.body.credentialRef).toMatch(/^cred:[0-9a-f-]{36}$/);
    const completed = res.body.events.find((e: { type: string }) => e.type === 'node.completed');
    expect(completed.payload.outputs.echoed).toBe(`[REDACTED:${res.body.credentialRef}]`);
    expect(res.body.events.map((e: { type: string }) => e.type)).toEqual(['node.started', 'node.completed']);
    expect(res.body.snapshot.status).toBe('completed');

    // Nowhere else either: event rows, runs, logs; and the seeded credential is gone again.
    const [{ n }] = await t.ds.query(`SELECT count(*)::int AS n FROM "event" WHERE "payload"::text LIKE $1`, [`%${CANARY}%`]);
    expect(n).toBe(0);
    const [{ r }] = await t.ds.query(`SELECT count(*)::int AS r FROM "run" WHERE "metadata"::text LIKE $1`, [`%${CANARY}%`]);
    expect(r).toBe(0);
    expect(t.logs.filter((l) => l.includes(CANARY))).toEqual([]);
    const [{ c }] = await t.ds.query(`SELECT count(*)::int AS c FROM "credential" WHERE "id" = $1`, [res.body.credentialRef.slice('cred:'.length)]);
    expect(c).toBe(0);
  });

  it('is a seam: authenticated, scoped, validated, and 404 when seams are off', async () => {
    expect((await t.http('POST', '/v1/host/sample/credentials/echo', { body: { canary: CANARY } })).status).toBe(401);
    const reader = await t.key({ tenant: 'conformance', scopes: ['connections:read'] });
    expect((await t.http('POST', '/v1/host/sample/credentials/echo', { token: reader, body: { canary: CANARY } })).status).toBe(403);
    for (const body of [{}, { canary: '' }, { canary: 7 }, { canary: CANARY, extra: 1 }]) {
      const bad = await t.http('POST', '/v1/host/sample/credentials/echo', { token: key, body });
      expect(bad.status).toBe(400);
      expect(bad.body.error).toBe('validation_error');
      expect(bad.text).not.toContain(CANARY);
    }
    const off = await createTestApp();
    try {
      const offKey = await off.key({ tenant: 'conformance', roles: ['admin'] });
      const r = await off.http('POST', '/v1/host/sample/credentials/echo', { token: offKey, body: { canary: CANARY } });
      expect(r.status).toBe(404);
    } finally {
      await off.close();
    }
  });
});
