import { ArtifactRegistryService } from '../../src/platform/artifacts/artifact-registry.service';
import { EventLogService, HOST_STREAM } from '../../src/platform/events/event-log.service';
import { SchemaRegistry } from '../../src/platform/schemas/schema-registry';
import { ApprovalsService } from '../../src/capabilities/approvals/approvals.service';
import { createTestApp, TestApp } from '../support/test-app';

function chainPack(name: string): Record<string, unknown> {
  return {
    name,
    version: '1.0.0',
    kind: 'workflow-chain',
    engines: { openwop: '^1.0.0' },
    chains: [
      {
        chainId: `${name}.run`,
        version: '1.0.0',
        label: 'Gated chain',
        description: 'A chain released by an approval gate.',
        parameters: { type: 'object' },
        dag: { nodes: [{ id: 'a', typeId: 'core.noop' }] },
      },
    ],
  };
}

describe('proposals (approval-gate activation, quorum 2, role viewer)', () => {
  let t: TestApp;
  let publisher: string;
  let reviewer: string;
  let approver1: string;
  let approver2: string;
  let bystander: string;
  let roleless: string;
  let foreignApprover: string;
  const schemas = SchemaRegistry.shared();

  beforeAll(async () => {
    t = await createTestApp({
      env: { OPENWOP_PROPOSALS_ACTIVATION: 'approval-gate' },
      configFile: { proposals: { approval: { quorum: 2, timeoutMs: 3_600_000, requiredRole: 'viewer' } } },
    });
    publisher = await t.key({ tenant: 'acme', principal: 'pub', scopes: ['proposals:read', 'proposals:propose', 'proposals:review', 'packs:publish', 'tools:read'] });
    reviewer = await t.key({ tenant: 'acme', principal: 'rev', scopes: ['proposals:read', 'proposals:review', 'tools:read'] });
    approver1 = await t.key({ tenant: 'acme', principal: 'ap1', scopes: ['approvals:respond'], roles: ['viewer'] });
    approver2 = await t.key({ tenant: 'acme', principal: 'ap2', scopes: ['approvals:respond'], roles: ['viewer'] });
    roleless = await t.key({ tenant: 'acme', principal: 'ap3', scopes: ['approvals:respond', 'proposals:read'] });
    bystander = await t.key({ tenant: 'acme', principal: 'by', scopes: ['proposals:read'] });
    foreignApprover = await t.key({ tenant: 'globex', principal: 'ap9', scopes: ['approvals:respond'] });
  });

  afterAll(async () => {
    await t?.close();
  });

  async function draft(name: string): Promise<string> {
    const res = await t.http('POST', '/v1/proposals', { token: publisher, body: { kind: 'workflow-chain-pack', artifact: chainPack(name), provenance: { sourceRunIds: ['run-1'] } } });
    expect(res.status).toBe(201);
    return res.body.id;
  }

  const installed = (name: string) => t.moduleRef.get(ArtifactRegistryService).get({ tenant: 'acme' }, 'workflow-chain-pack', name);
  const events = (type: string) => t.moduleRef.get(EventLogService).read({ tenant: 'acme' }, HOST_STREAM, { type });
  const proposal = async (id: string) => (await t.http('GET', `/v1/proposals/${id}`, { token: publisher })).body;

  it('advertises approval-gate activation', async () => {
    const doc = await t.http('GET', '/.well-known/openwop');
    expect(doc.body.agents.proposals.activation).toBe('approval-gate');
  });

  it('still answers 403 to apply without the activation scope (no gate opened)', async () => {
    const id = await draft('private.acme.gate-403');
    const res = await t.http('POST', `/v1/proposals/${id}/apply`, { token: reviewer, body: {} });
    expect(res.status).toBe(403);
    expect((await t.http('GET', '/v1/approvals', { token: approver1 })).body.approvals.filter((a: { subject: { id: string } }) => a.subject.id === id)).toEqual([]);
  });

  it('installs only when a quorum of distinct authorized principals grants', async () => {
    const id = await draft('private.acme.gated');
    const applied = await t.http('POST', `/v1/proposals/${id}/apply`, { token: publisher, body: {} });
    expect(applied.status).toBe(202);
    expect(applied.body.status).toBe('pending-approval');
    const gateId = applied.body.pendingApprovalId as string;
    // Applying again while the gate is open returns the same gate.
    expect((await t.http('POST', `/v1/proposals/${id}/apply`, { token: publisher, body: {} })).body.pendingApprovalId).toBe(gateId);

    // Until release: not applied, no activation, nothing installed, not in the tool catalog.
    const pending = await proposal(id);
    expect(pending.state).toBe('draft');
    expect(pending.activation).toBeNull();
    expect(schemas.validate('proposal', pending)).toEqual([]);
    expect(await installed('private.acme.gated')).toBeUndefined();
    const interrupt = (await events('interrupt.requested')).find((e) => (e.payload.data as { gateId?: string }).gateId === gateId);
    expect(interrupt!.payload).toMatchObject({ kind: 'approval', data: { gateId, requiredScope: 'approvals:respond', requiredRole: 'viewer', quorum: 2 } });
    expect(schemas.validate('suspend-request', interrupt!.payload)).toEqual([]);

    // Unauthorized: lacking the route scope, or from another tenant (404, no oracle).
    expect((await t.http('POST', `/v1/approvals/${gateId}/grant`, { token: bystander, body: {} })).status).toBe(403);
    expect((await t.http('POST', `/v1/approvals/${gateId}/grant`, { token: foreignApprover, body: {} })).status).toBe(404);
    expect((await t.http('GET', `/v1/approvals/${gateId}`, { token: foreignApprover })).status).toBe(404);
    expect((await t.http('GET', '/v1/approvals', { token: foreignApprover })).body.approvals).toEqual([]);
    // Holds the route scope but not the gate's required role: denied, fail closed, nothing recorded.
    const noRole = await t.http('POST', `/v1/approvals/${gateId}/grant`, { token: roleless, body: {} });
    expect(noRole.status).toBe(403);
    expect(noRole.body).toMatchObject({ error: 'forbidden', details: { requiredRole: 'viewer' } });

    const first = await t.http('POST', `/v1/approvals/${gateId}/grant`, { token: approver1, body: { reason: 'looks right' } });
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ state: 'pending', granted: 1, quorum: 2 });
    // The item names what it holds: a proposal (no run step) and where a person sees it.
    expect(first.body).toMatchObject({ title: 'workflow-chain-pack proposal', subject: { kind: 'proposal', id }, runId: null, nodeId: null, workflowId: null, link: `/console/#/proposals/${id}` });
    // The same principal cannot count twice.
    const twice = await t.http('POST', `/v1/approvals/${gateId}/grant`, { token: approver1, body: {} });
    expect(twice.status).toBe(409);
    expect(twice.body.error).toBe('approval_already_decided');
    expect(await installed('private.acme.gated')).toBeUndefined();

    const second = await t.http('POST', `/v1/approvals/${gateId}/grant`, { token: approver2 });
    expect(second.status).toBe(200);
    expect(second.body).toMatchObject({ state: 'granted', granted: 2 });

    const done = await proposal(id);
    expect(done.state).toBe('applied');
    expect(done.activation).toEqual({ approvalId: gateId, installedArtifactRef: (await installed('private.acme.gated'))!.ref });
    expect(schemas.validate('proposal', done)).toEqual([]);
    const activated = (await events('proposal.activated')).filter((e) => e.payload.proposalId === id);
    expect(activated.map((e) => e.payload)).toEqual([{ proposalId: id, kind: 'workflow-chain-pack', approvalId: gateId, installedArtifactRef: done.activation.installedArtifactRef }]);
    const granted = (await events('approval.granted')).filter((e) => e.payload.gateId === gateId);
    expect(granted.map((e) => e.payload.principal)).toEqual(['ap1', 'ap2']);
    const grantedSchema = { $ref: 'https://openwop.dev/spec/v1/run-event-payloads.schema.json#/$defs/approvalGranted' };
    for (const e of granted) expect(schemas.validateWith(grantedSchema, e.payload)).toEqual([]);
    const tools = await t.http('GET', '/v1/tools', { token: publisher });
    expect((tools.body as Array<{ toolId: string }>).map((x) => x.toolId)).toContain('workflow:private.acme.gated.run');
    // A closed gate takes no more decisions.
    expect((await t.http('POST', `/v1/approvals/${gateId}/deny`, { token: approver1, body: {} })).status).toBe(409);
  });

  it('a denial closes the gate and installs nothing; the proposal stays reviewable', async () => {
    const id = await draft('private.acme.denied');
    const gateId = (await t.http('POST', `/v1/proposals/${id}/apply`, { token: publisher, body: {} })).body.pendingApprovalId;
    const denied = await t.http('POST', `/v1/approvals/${gateId}/deny`, { token: approver1, body: { reason: 'too broad' } });
    expect(denied.status).toBe(200);
    expect(denied.body).toMatchObject({ state: 'denied', reason: 'too broad' });
    expect((await t.http('POST', `/v1/approvals/${gateId}/grant`, { token: approver2, body: {} })).status).toBe(409);
    expect(await installed('private.acme.denied')).toBeUndefined();
    const after = await proposal(id);
    expect(after.state).toBe('draft');
    expect(after.activation).toBeNull();
    expect((await events('approval.rejected')).some((e) => e.payload.gateId === gateId && e.payload.principal === 'ap1')).toBe(true);
    expect((await events('proposal.activated')).some((e) => e.payload.proposalId === id)).toBe(false);
  });

  it('a gate that times out auto-rejects and installs nothing', async () => {
    const id = await draft('private.acme.timeout');
    const gateId = (await t.http('POST', `/v1/proposals/${id}/apply`, { token: publisher, body: {} })).body.pendingApprovalId;
    await t.ds.query(`UPDATE "approval" SET "expires_at" = now() - interval '1 second' WHERE "id" = $1`, [gateId]);
    // A decision arriving after the deadline is refused (and closes the gate).
    const late = await t.http('POST', `/v1/approvals/${gateId}/grant`, { token: approver1, body: {} });
    expect(late.status).toBe(409);
    expect(late.body.details.state).toBe('expired');
    expect((await t.http('GET', `/v1/approvals/${gateId}`, { token: approver1 })).body).toMatchObject({ state: 'expired', reason: 'timeout', granted: 0 });
    expect(await installed('private.acme.timeout')).toBeUndefined();
    expect((await proposal(id)).activation).toBeNull();

    // The sweeper expires gates nobody touches.
    const id2 = await draft('private.acme.timeout-sweep');
    const gate2 = (await t.http('POST', `/v1/proposals/${id2}/apply`, { token: publisher, body: {} })).body.pendingApprovalId;
    await t.ds.query(`UPDATE "approval" SET "expires_at" = now() - interval '1 second' WHERE "id" = $1`, [gate2]);
    expect(await t.moduleRef.get(ApprovalsService).expireDue()).toBe(1);
    expect((await t.http('GET', `/v1/approvals/${gate2}`, { token: approver1 })).body.state).toBe('expired');
    expect((await events('approval.rejected')).some((e) => e.payload.gateId === gate2 && e.payload.reason === 'timeout')).toBe(true);
    // The proposal can be applied again: a fresh gate.
    const retry = await t.http('POST', `/v1/proposals/${id2}/apply`, { token: publisher, body: {} });
    expect(retry.status).toBe(202);
    expect(retry.body.pendingApprovalId).not.toBe(gate2);
  });

  it('a revision withdraws the open gate: approvers never release bytes they did not see', async () => {
    const id = await draft('private.acme.revised');
    const gateId = (await t.http('POST', `/v1/proposals/${id}/apply`, { token: publisher, body: {} })).body.pendingApprovalId;
    const revised = await t.http('PATCH', `/v1/proposals/${id}`, { token: reviewer, body: { artifact: { ...chainPack('private.acme.revised'), description: 'changed' } } });
    expect(revised.status).toBe(200);
    expect((await t.http('GET', `/v1/approvals/${gateId}`, { token: approver1 })).body.state).toBe('cancelled');
    expect((await t.http('POST', `/v1/approvals/${gateId}/grant`, { token: approver1, body: {} })).status).toBe(409);
    expect(await installed('private.acme.revised')).toBeUndefined();
  });

  it('refuses malformed decision bodies and ids', async () => {
    const id = await draft('private.acme.malformed');
    const gateId = (await t.http('POST', `/v1/proposals/${id}/apply`, { token: publisher, body: {} })).body.pendingApprovalId;
    for (const body of [{ reason: 5 }, { reason: '' }, { decision: 'granted' }]) {
      const res = await t.http('POST', `/v1/approvals/${gateId}/grant`, { token: approver1, body });
      expect(res.status).toBe(400);
      expect(res.body.error).toBe('validation_error');
    }
    expect((await t.http('GET', '/v1/approvals?state=open', { token: approver1 })).status).toBe(400);
    expect((await t.http('POST', '/v1/approvals/not-a-uuid/grant', { token: approver1, body: {} })).status).toBe(404);
    expect((await t.http('GET', `/v1/approvals/${gateId}`, { token: approver1 })).body.granted).toBe(0);
  });

  it('serves no seam paths when OPENWOP_TEST_SEAMS is off', async () => {
    const res = await t.http('GET', '/v1/host/sample/proposals', { token: publisher });
    expect(res.status).toBe(404);
    expect((await t.http('GET', '/v1/proposals', { token: publisher })).status).toBe(200);
  });

  it('refuses a pack this host could not run before any gate opens, and checks it again when the gate is released', async () => {
    const withDag = (name: string, dag: Record<string, unknown>) => ({ ...chainPack(name), chains: [{ ...(chainPack(name).chains as object[])[0], dag }] });
    const broken = await t.http('POST', '/v1/proposals', {
      token: publisher,
      body: { kind: 'workflow-chain-pack', artifact: withDag('vendor.gate.broken', { nodes: [{ id: 'a', typeId: 'vendor.nobody.serves' }] }), provenance: { sourceRunIds: ['run-1'] } },
    });
    const refused = await t.http('POST', `/v1/proposals/${broken.body.id}/apply`, { token: publisher, body: {} });
    expect([refused.status, refused.body.error, refused.body.details.problems.map((p: { code: string }) => p.code)]).toEqual([422, 'workflow_invalid', ['unknown_node_type']]);
    expect((await t.http('GET', `/v1/proposals/${broken.body.id}`, { token: publisher })).body).toMatchObject({ state: 'draft' });
    expect((await t.ds.query(`SELECT count(*) AS n FROM "approval" WHERE "subject_id" = $1`, [broken.body.id]))[0].n).toBe('0');

    // A chain calling a chain another pack provides: sound when applied, not once that pack is gone.
    const registry = t.app.get(ArtifactRegistryService);
    await registry.install('workflow-chain-pack', chainPack('vendor.gate.helper'), { tenant: 'acme', principal: 'pub' }, 'test');
    const caller = await t.http('POST', '/v1/proposals', {
      token: publisher,
      body: { kind: 'workflow-chain-pack', artifact: withDag('vendor.gate.caller', { nodes: [{ id: 'c', typeId: 'core.tool', config: { toolId: 'workflow:vendor.gate.helper.run' } }] }), provenance: { sourceRunIds: ['run-1'] } },
    });
    const opened = await t.http('POST', `/v1/proposals/${caller.body.id}/apply`, { token: publisher, body: {} });
    expect([opened.status, opened.body.status]).toEqual([202, 'pending-approval']);
    await registry.uninstall({ tenant: 'acme', principal: 'pub' }, 'workflow-chain-pack', 'vendor.gate.helper');
    const gate = opened.body.pendingApprovalId as string;
    expect((await t.http('POST', `/v1/approvals/${gate}/grant`, { token: approver1, body: {} })).status).toBe(200);
    const released = await t.http('POST', `/v1/approvals/${gate}/grant`, { token: approver2, body: {} });
    expect([released.status, released.body.error, released.body.details?.problems?.map((p: { code: string }) => p.code)]).toEqual([422, 'workflow_invalid', ['unknown_tool']]);
    expect(await registry.get({ tenant: 'acme' }, 'workflow-chain-pack', 'vendor.gate.caller')).toBeUndefined();
    // The refused vote recorded nothing: the gate still waits, and the same approver releases it once the pack is back.
    expect((await t.http('GET', `/v1/approvals/${gate}`, { token: approver2 })).body).toMatchObject({ state: 'pending' });
    await registry.install('workflow-chain-pack', chainPack('vendor.gate.helper'), { tenant: 'acme', principal: 'pub' }, 'test');
    const retried = await t.http('POST', `/v1/approvals/${gate}/grant`, { token: approver2, body: {} });
    expect([retried.status, retried.body.state]).toEqual([200, 'granted']);
    expect((await t.http('GET', `/v1/proposals/${caller.body.id}`, { token: publisher })).body).toMatchObject({ state: 'applied' });
    expect(await registry.get({ tenant: 'acme' }, 'workflow-chain-pack', 'vendor.gate.caller')).toBeDefined();
  });

});
