/**
 * What the official `audit-log-integrity` scenario asserts, checked with the project's own code and
 * schemas under the suite's environment (seams on, the suite's key minted first in a fresh tenant,
 * holding audit:read as the profile requires): the `auth` advertisement valid against
 * capabilities.schema.json, `GET /v1/audit/verify?fromSeq=0&toSeq=100` answering the closed
 * AuditVerifyResult with `chainValid: true`, `anomalies: []` and a signed checkpoint, and the
 * checkpoints listed ascending no more than `checkpointIntervalEntries` apart.
 */
import { createPublicKey, verify } from 'node:crypto';
import { SchemaRegistry } from '../../src/platform/schemas/schema-registry';
import { createTestApp, TestApp } from '../support/test-app';

describe('conformance: audit-log-integrity', () => {
  let t: TestApp;
  let key: string;
  const schemas = SchemaRegistry.shared();

  beforeAll(async () => {
    t = await createTestApp({ env: { OPENWOP_TEST_SEAMS: 'true' } });
    key = await t.key({ tenant: 'conformance', principal: 'suite', scopes: ['runs:read', 'runs:create', 'runs:cancel', 'approvals:respond', 'audit:read'] });
    await t.key({ tenant: 'conformance', principal: 'low-scope', scopes: ['runs:read'] });
  });
  afterAll(async () => t?.close());

  it('claims the profile with the facets a verifier needs, valid against capabilities.schema.json', async () => {
    const res = await t.http('GET', '/.well-known/openwop');
    expect(res.body.auth.profiles).toContain('openwop-audit-log-integrity');
    const caps = schemas.validator('capabilities').schema as { properties: { auth: Record<string, unknown> } };
    expect(schemas.validateWith(caps.properties.auth, res.body.auth)).toEqual([]);
    const a = res.body.auth.auditLogIntegrity;
    expect(a.hashChain).toBe(true);
    expect(a.checkpointSignatureAlgorithm).toBe('ed25519');
    expect(createPublicKey({ key: Buffer.from(a.checkpointPublicKey, 'base64'), format: 'der', type: 'spki' }).asymmetricKeyType).toBe('ed25519');
    expect(Number.isInteger(a.checkpointIntervalEntries) && a.checkpointIntervalEntries >= 1).toBe(true);
  });

  it('verifies an unmodified range: the closed shape, chainValid, no anomalies, a signed checkpoint', async () => {
    const res = await t.http('GET', '/v1/audit/verify?fromSeq=0&toSeq=100', { token: key });
    expect(res.status).toBe(200);
    expect(schemas.validate('audit-verify-result', res.body)).toEqual([]);
    expect(res.body.chainValid).toBe(true);
    expect(res.body.anomalies).toEqual([]);
    expect(res.body.checkpoints.length).toBeGreaterThan(0);
    const pub = createPublicKey({ key: Buffer.from((await t.http('GET', '/.well-known/openwop')).body.auth.auditLogIntegrity.checkpointPublicKey, 'base64'), format: 'der', type: 'spki' });
    for (const cp of res.body.checkpoints) expect(verify(null, Buffer.from(cp.merkleRoot, 'hex'), pub, Buffer.from(cp.signature, 'base64'))).toBe(true);
  });

  it('lists every checkpoint ascending, no more than checkpointIntervalEntries apart', async () => {
    const every = (await t.http('GET', '/.well-known/openwop')).body.auth.auditLogIntegrity.checkpointIntervalEntries as number;
    const res = await t.http('GET', '/v1/audit/verify?fromSeq=0&toSeq=1000000', { token: key });
    let prev = 0;
    for (const { atSequence } of res.body.checkpoints as Array<{ atSequence: number }>) {
      expect(atSequence).toBeGreaterThanOrEqual(prev);
      expect(atSequence - prev).toBeLessThanOrEqual(every);
      prev = atSequence;
    }
    expect(prev).toBeGreaterThan(0);
  });

  it('answers 403 to a key without audit:read (the suite key must carry it)', async () => {
    const low = await t.key({ tenant: 'conformance', principal: 'no-audit', scopes: ['runs:read'] });
    expect((await t.http('GET', '/v1/audit/verify?fromSeq=0&toSeq=100', { token: low })).status).toBe(403);
  });
});
