/**
 * RFC 0051 governance approval gates (`core.openwop.governance.approvalGate`, RFC 0093): a gate's own
 * requirement decides who may resolve it (anyone else: 403, the gate stays pending); its override
 * path needs the override requirement and a reason, is emitted as approval.overridden and audited,
 * counts as one grant unless overrideBypassesQuorum releases the gate; install refuses a gate with
 * no requirement. And the approval-gate seam drives these through the same service.
 */
import { createTestApp, TestApp } from '../support/test-app';
import { installChains } from './run-kit';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

describe('governance approval gate', () => {
  let t: TestApp;
  let approver: string;
  let deployer: string;
  let outsider: string;

  const chain = (id: string, config: Json) => ({ [id]: { nodes: [{ id: 'gate', typeId: 'core.openwop.governance.approvalGate', config }] } });

  beforeAll(async () => {
    t = await createTestApp({ env: { OPENWOP_TEST_SEAMS: 'true' } });
    // The gate asks for a scope of its own: holders of approvals:respond alone may not resolve it.
    approver = await t.key({ principal: 'release-manager', scopes: ['runs:create', 'runs:read', 'approvals:respond', 'deploy:promote', 'deploy:override'] });
    deployer = await t.key({ principal: 'second-manager', scopes: ['runs:read', 'approvals:respond', 'deploy:promote'] });
    outsider = await t.key({ principal: 'bystander', scopes: ['runs:read', 'approvals:respond'] });
    await installChains(t, 'default', 'vendor.test.governance', {
      ...chain('gov.one', { requiredScope: 'deploy:promote', override: { requiredScope: 'deploy:override' } }),
      ...chain('gov.two', { requiredScope: 'deploy:promote', quorum: 2, override: { requiredScope: 'deploy:override' } }),
      ...chain('gov.bypass', { requiredScope: 'deploy:promote', quorum: 2, override: { requiredScope: 'deploy:override' }, overrideBypassesQuorum: true }),
    });
  });

  afterAll(async () => {
    await t?.close();
  });

  async function gateOf(workflowId: string): Promise<{ runId: string; gateId: string }> {
    const c = await t.http('POST', '/v1/runs', { token: approver, body: { workflowId } });
    expect(c.status).toBe(201);
    for (let i = 0; i < 200; i++) {
      const list = await t.http('GET', '/v1/approvals?state=pending', { token: approver });
      const g = (list.body.approvals as Json[]).find((a) => a.runId === c.body.runId);
      if (g) return { runId: c.body.runId as string, gateId: g.id as string };
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new TypeError('no gate opened');
  }

  const runStatus = async (runId: string) => {
    for (let i = 0; i < 100; i++) {
      const s = (await t.http('GET', `/v1/runs/${runId}`, { token: approver })).body.status as string;
      if (s !== 'waiting-approval' && s !== 'running' && s !== 'pending') return s;
      await new Promise((r) => setTimeout(r, 50));
    }
    return 'waiting-approval';
  };

  it('is resolved only by principals holding its own requirement', async () => {
    const { runId, gateId } = await gateOf('gov.one');
    const refused = await t.http('POST', `/v1/approvals/${gateId}/grant`, { token: outsider, body: {} });
    expect([refused.status, refused.body.error, refused.body.details?.requiredScopes]).toEqual([403, 'forbidden', ['deploy:promote']]);
    expect((await t.http('GET', `/v1/approvals/${gateId}`, { token: approver })).body.state).toBe('pending');
    expect((await t.http('POST', `/v1/approvals/${gateId}/grant`, { token: deployer, body: {} })).status).toBe(200);
    expect(await runStatus(runId)).toBe('completed');
  });

  it('override: needs the override requirement and a reason, emits approval.overridden, audits it, and counts as one grant', async () => {
    const { runId, gateId } = await gateOf('gov.two');
    expect((await t.http('POST', `/v1/approvals/${gateId}/override`, { token: deployer, body: { reason: 'hotfix' } })).status).toBe(403);
    expect((await t.http('POST', `/v1/approvals/${gateId}/override`, { token: approver, body: {} })).status).toBe(400);
    const o = await t.http('POST', `/v1/approvals/${gateId}/override`, { token: approver, body: { reason: 'emergency publish' } });
    expect([o.status, o.body.state]).toEqual([200, 'pending']);
    const [event] = (await t.ds.query(`SELECT "payload" FROM "event" WHERE "type" = 'approval.overridden' AND "correlation_id" = $1`, [runId])) as Array<{ payload: Json }>;
    expect(event.payload).toEqual(expect.objectContaining({ gateId, principal: 'release-manager', reason: 'emergency publish', released: false }));
    const [audit] = (await t.ds.query(`SELECT count(*)::int AS "n" FROM "audit_entry" WHERE "action" = 'approval.overridden' AND "entry"->'resource'->>'id' = $1`, [gateId])) as Array<{ n: number }>;
    expect(audit.n).toBe(1);
    // The second distinct grant releases it.
    expect((await t.http('POST', `/v1/approvals/${gateId}/grant`, { token: deployer, body: {} })).body.state).toBe('granted');
    expect(await runStatus(runId)).toBe('completed');
  });

  it('override with overrideBypassesQuorum releases the gate at once; a gate without an override path refuses one', async () => {
    const { runId, gateId } = await gateOf('gov.bypass');
    const o = await t.http('POST', `/v1/approvals/${gateId}/override`, { token: approver, body: { reason: 'incident 42' } });
    expect([o.status, o.body.state]).toEqual([200, 'granted']);
    expect(await runStatus(runId)).toBe('completed');
    const plain = await t.http('POST', '/v1/runs', { token: approver, body: { workflowId: 'conformance-approval' } });
    let gate: Json | undefined;
    for (let i = 0; i < 200 && !gate; i++) {
      gate = ((await t.http('GET', '/v1/approvals?state=pending', { token: approver })).body.approvals as Json[]).find((a) => a.runId === plain.body.runId);
      if (!gate) await new Promise((r) => setTimeout(r, 50));
    }
    const refused = await t.http('POST', `/v1/approvals/${gate!.id}/override`, { token: approver, body: { reason: 'x' } });
    expect([refused.status, refused.body.error]).toEqual([409, 'override_unavailable']);
  });

  it('refuses to run a gate naming no requirement, an unknown role or a bad quorum (422 workflow_invalid, nothing started)', async () => {
    for (const [id, config, message] of [
      ['gov.none', {}, /needs requiredRole or requiredScope/],
      ['gov.role', { requiredRole: 'no-such-role' }, /must name a host role/],
      ['gov.q', { requiredScope: 'deploy:promote', quorum: 0 }, /quorum must be an integer/],
    ] as Array<[string, Json, RegExp]>) {
      await installChains(t, 'default', `vendor.test.governance-bad-${id.replace('.', '-')}`, chain(id, config));
      const r = await t.http('POST', '/v1/runs', { token: approver, body: { workflowId: id } });
      expect([r.status, r.body.error]).toEqual([422, 'workflow_invalid']);
      expect(JSON.stringify(r.body.details)).toMatch(message);
    }
  });

  it('the approval-gate seam: an unseeded principal does not release; an override is released and audited with its reason', async () => {
    const seamKey = await t.key({ scopes: ['runs:create', 'runs:read', 'approvals:respond'] });
    const u = await t.http('POST', '/v1/host/sample/governance/approval-gate', { token: seamKey, body: { scenario: 'unauthorized-grant', principal: 'conformance-unauthorized-principal' } });
    expect(u.status).toBe(200);
    expect(u.body).toEqual(expect.objectContaining({ released: false, state: 'pending', event: { type: 'authorization.decided', payload: expect.objectContaining({ allowed: false, reason: 'unseeded-principal' }) } }));
    const o = await t.http('POST', '/v1/host/sample/governance/approval-gate', { token: seamKey, body: { scenario: 'override', principal: 'conformance-owner-principal', reason: 'conformance emergency publish' } });
    expect(o.body).toEqual(expect.objectContaining({ released: true, state: 'granted', event: { type: 'approval.overridden', payload: expect.objectContaining({ reason: 'conformance emergency publish' }) } }));
    // Malformed bodies are refused before anything runs.
    for (const body of [{ scenario: 'bogus' }, { scenario: 'unauthorized-grant' }, { scenario: 'override' }, { scenario: 'unauthorized-grant', principal: 'bad principal/' }]) {
      const bad = await t.http('POST', '/v1/host/sample/governance/approval-gate', { token: seamKey, body });
      expect([bad.status, bad.body.error]).toEqual([400, 'validation_error']);
    }
    // A principal the gate would accept is never acted as.
    await t.key({ principal: 'able-approver', scopes: ['approvals:respond'] });
    const a = await t.http('POST', '/v1/host/sample/governance/approval-gate', { token: seamKey, body: { scenario: 'unauthorized-grant', principal: 'able-approver' } });
    expect([a.status, a.body.error]).toEqual([422, 'scenario_inapplicable']);
  });
});
