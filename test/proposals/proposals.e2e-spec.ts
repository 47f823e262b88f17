import { createHash } from 'node:crypto';
import { ArtifactRegistryService } from '../../src/platform/artifacts/artifact-registry.service';
import { EventLogService, HOST_STREAM } from '../../src/platform/events/event-log.service';
import { RunService } from '../../src/capabilities/runs/run.service';
import { systemPrincipal } from '../../src/platform/identity/principal';
import { SchemaRegistry } from '../../src/platform/schemas/schema-registry';
import { AutomationRunnerService } from '../../src/capabilities/proposals/automations/automation-runner.service';
import { SynthesisService } from '../../src/capabilities/proposals/synthesis/synthesis.service';
import { PeriodicTaskService } from '../../src/platform/scheduler/periodic-task.service';
import { createTestApp, TestApp } from '../support/test-app';

const ALL = ['proposals:read', 'proposals:propose', 'proposals:review', 'packs:publish', 'tools:read', 'runs:read', 'runs:create'];

function chainPack(name: string, chainId = `${name}.run`): Record<string, unknown> {
  return {
    name,
    version: '1.0.0',
    kind: 'workflow-chain',
    engines: { openwop: '^1.0.0' },
    chains: [
      {
        chainId,
        version: '1.0.0',
        label: 'Digest',
        description: 'Builds the weekly digest.',
        parameters: { type: 'object', properties: {} },
        dag: { nodes: [{ id: 'a', typeId: 'core.noop' }] },
      },
    ],
  };
}

/** The ref a client computes over the bytes it sent (the test client sends `JSON.stringify(body)`). */
function sha256Ref(value: unknown): string {
  return textHash(JSON.stringify(value));
}

function textHash(text: string): string {
  return `sha256:${createHash('sha256').update(text, 'utf8').digest('hex')}`;
}

describe('proposals (direct-rbac)', () => {
  let t: TestApp;
  let admin: string;
  let proposer: string;
  let reader: string;
  let otherTenant: string;
  const schemas = SchemaRegistry.shared();

  beforeAll(async () => {
    t = await createTestApp({ openApi: false, env: { OPENWOP_TEST_SEAMS: 'true' } });
    admin = await t.key({ tenant: 'acme', principal: 'alice', scopes: ALL });
    proposer = await t.key({ tenant: 'acme', principal: 'learner', scopes: ['proposals:propose', 'proposals:read'] });
    reader = await t.key({ tenant: 'acme', principal: 'reviewer', scopes: ['proposals:read', 'proposals:review', 'tools:read'] });
    otherTenant = await t.key({ tenant: 'globex', principal: 'mallory', scopes: ALL });
  });

  afterAll(async () => {
    await t?.close();
  });

  async function create(token: string, body: Record<string, unknown>) {
    const res = await t.http('POST', '/v1/proposals', { token, body });
    expect(res.status).toBe(201);
    return res.body as Record<string, any>;
  }

  async function hostEvents(tenant: string, type: string) {
    return t.moduleRef.get(EventLogService).read({ tenant }, HOST_STREAM, { type });
  }

  async function toolIds(token: string): Promise<string[]> {
    const res = await t.http('GET', '/v1/tools', { token });
    expect(res.status).toBe(200);
    // The standard view is a bare array of ToolDescriptor.
    return (res.body as Array<{ toolId: string }>).map((x) => x.toolId);
  }

  it('creates an inert draft that validates against proposal.schema.json and emits a content-free proposal.created', async () => {
    const p = await create(proposer, {
      kind: 'workflow-chain-pack',
      title: 'Weekly digest',
      rationale: 'Seen three times',
      artifact: chainPack('private.acme.create-test'),
      provenance: { sourceRunIds: ['run-a', 'run-b'], synthesizerModel: 'ext-learner' },
    });
    expect(p.state).toBe('draft');
    expect(p.activation).toBeNull();
    expect(p.duplicateOf).toBeNull();
    expect(p.owner).toEqual({ tenant: 'acme', principal: 'learner' });
    expect(p.provenance).toEqual({ sourceRunIds: ['run-a', 'run-b'], synthesizerModel: 'ext-learner' });
    expect(schemas.validate('proposal', p)).toEqual([]);

    const created = (await hostEvents('acme', 'proposal.created')).find((e) => e.payload.proposalId === p.id);
    expect(created).toBeDefined();
    expect(created!.payload).toEqual({ proposalId: p.id, kind: 'workflow-chain-pack', sourceRunIds: ['run-a', 'run-b'], duplicateOf: null });
    const payloadSchema = { $ref: 'https://openwop.dev/spec/v1/run-event-payloads.schema.json#/$defs/proposalCreated' };
    expect(schemas.validateWith(payloadSchema, created!.payload)).toEqual([]);
  });

  it.each([
    ['no provenance', { kind: 'automation', artifact: {} }],
    ['an unknown kind', { kind: 'rule', artifact: {}, provenance: { sourceRunIds: [] } }],
    ['an array artifact', { kind: 'automation', artifact: [], provenance: { sourceRunIds: [] } }],
    ['an empty run id', { kind: 'automation', artifact: {}, provenance: { sourceRunIds: [''] } }],
    ['an unknown field', { kind: 'automation', artifact: {}, provenance: { sourceRunIds: [] }, state: 'applied' }],
    ['an unknown provenance field', { kind: 'automation', artifact: {}, provenance: { sourceRunIds: [], secret: 'x' } }],
  ])('refuses a create with %s (400 validation_error)', async (_label, body) => {
    const res = await t.http('POST', '/v1/proposals', { token: proposer, body });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('validation_error');
    expect(Object.keys(res.body).every((k) => ['error', 'message', 'details'].includes(k))).toBe(true);
  });

  it('refuses a create without proposals:propose (403) and without a credential (401)', async () => {
    const body = { kind: 'automation', artifact: {}, provenance: { sourceRunIds: [] } };
    expect((await t.http('POST', '/v1/proposals', { token: reader, body })).status).toBe(403);
    expect((await t.http('POST', '/v1/proposals', { body })).status).toBe(401);
    expect((await t.http('GET', '/v1/proposals')).status).toBe(401);
  });

  it('lists by state and kind on both paths and refuses malformed filters', async () => {
    const p = await create(proposer, { kind: 'automation', artifact: { name: 'list-me' }, provenance: { sourceRunIds: [] } });
    for (const base of ['/v1/proposals', '/v1/host/sample/proposals']) {
      const drafts = await t.http('GET', `${base}?state=draft&kind=automation`, { token: reader });
      expect(drafts.status).toBe(200);
      expect(drafts.body.proposals.map((x: { id: string }) => x.id)).toContain(p.id);
      expect(drafts.body.proposals.every((x: { state: string; kind: string }) => x.state === 'draft' && x.kind === 'automation')).toBe(true);
      const applied = await t.http('GET', `${base}?state=applied&kind=automation`, { token: reader });
      expect(applied.body.proposals.map((x: { id: string }) => x.id)).not.toContain(p.id);
    }
    for (const q of ['state=live', 'kind=rule', 'limit=0', 'limit=abc', 'bogus=1']) {
      const res = await t.http('GET', `/v1/proposals?${q}`, { token: reader });
      expect(res.status).toBe(400);
      expect(res.body.error).toBe('validation_error');
    }
  });

  it('keeps a draft workflow-chain pack out of the tool catalog until it is applied (inertness)', async () => {
    const p = await create(proposer, {
      kind: 'workflow-chain-pack',
      artifact: chainPack('private.acme.inert', 'private.acme.inert.digest'),
      provenance: { sourceRunIds: ['r1'] },
    });
    expect(await toolIds(reader)).not.toContain('workflow:private.acme.inert.digest');
    // Revising does not activate either.
    const revised = await t.http('PATCH', `/v1/proposals/${p.id}`, { token: reader, body: { title: 'Digest chain' } });
    expect(revised.status).toBe(200);
    expect(revised.body.state).toBe('revised');
    expect(revised.body.activation).toBeNull();
    expect(await toolIds(reader)).not.toContain('workflow:private.acme.inert.digest');

    const applied = await t.http('POST', `/v1/proposals/${p.id}/apply`, { token: admin, body: {} });
    expect(applied.status).toBe(200);
    expect(await toolIds(reader)).toContain('workflow:private.acme.inert.digest');
  });

  it('installs an applied agent pack as node-pack tools (and a draft one not at all)', async () => {
    const agentPack = {
      name: 'vendor.acme.agent-tools',
      version: '1.0.0',
      engines: { openwop: '>=1.0.0 <2.0.0' },
      runtime: { language: 'javascript', entry: 'dist/index.js' },
      nodes: [{ typeId: 'vendor.acme.agent.triage', version: '1.0.0', category: 'data', role: 'pure', label: 'Triage' }],
    };
    const p = await create(proposer, { kind: 'agent-pack', artifact: agentPack, provenance: { sourceRunIds: [] } });
    expect(await toolIds(reader)).not.toContain('openwop:vendor.acme.agent.triage');
    const applied = await t.http('POST', `/v1/proposals/${p.id}/apply`, { token: admin, body: {} });
    expect(applied.status).toBe(200);
    expect(await toolIds(reader)).toContain('openwop:vendor.acme.agent.triage');
    expect(await t.moduleRef.get(ArtifactRegistryService).bytes({ tenant: 'acme' }, 'node-pack', 'vendor.acme.agent-tools')).toBe(JSON.stringify(agentPack));
  });

  it('installs exactly the last persisted bytes (revise → apply → compare)', async () => {
    const p = await create(proposer, { kind: 'workflow-chain-pack', artifact: chainPack('private.acme.bytes'), provenance: { sourceRunIds: [] } });
    // The revision, with keys in a non-canonical order and a changed description.
    const revisedArtifact = { ...chainPack('private.acme.bytes'), description: 'revised by a reviewer', version: '1.0.1' };
    const reordered = Object.fromEntries(Object.entries(revisedArtifact).reverse());
    const revised = await t.http('PATCH', `/v1/host/sample/proposals/${p.id}`, { token: reader, body: { artifact: reordered, note: 'tightened' } });
    expect(revised.status).toBe(200);
    expect(revised.body.artifact).toEqual(revisedArtifact);
    expect(revised.text).toContain(`"artifact":${JSON.stringify(reordered)}`);

    const applied = await t.http('POST', `/v1/host/sample/proposals/${p.id}/apply`, { token: admin, body: {} });
    expect(applied.status).toBe(200);
    const expectedRef = sha256Ref(reordered);
    expect(applied.body.installedArtifactRef).toBe(expectedRef);
    expect(applied.body.approvalId).toBeNull();
    expect(applied.body.proposal.state).toBe('applied');
    expect(applied.body.proposal.activation).toEqual({ approvalId: null, installedArtifactRef: expectedRef });

    const stored = await t.http('GET', `/v1/proposals/${p.id}`, { token: reader });
    expect(stored.body.artifact).toEqual(revisedArtifact);
    expect(schemas.validate('proposal', stored.body)).toEqual([]);
    const installedBytes = await t.moduleRef.get(ArtifactRegistryService).bytes({ tenant: 'acme' }, 'workflow-chain-pack', 'private.acme.bytes');
    expect(installedBytes).toBe(JSON.stringify(reordered));

    // Re-applying the same bytes yields the same ref and installs nothing new.
    const again = await t.http('POST', `/v1/proposals/${p.id}/apply`, { token: admin, body: {} });
    expect(again.status).toBe(200);
    expect(again.body.installedArtifactRef).toBe(expectedRef);
    const activated = (await hostEvents('acme', 'proposal.activated')).filter((e) => e.payload.proposalId === p.id);
    expect(activated).toHaveLength(1);
    expect(activated[0].payload).toEqual({ proposalId: p.id, kind: 'workflow-chain-pack', approvalId: null, installedArtifactRef: expectedRef });
  });

  it('answers exactly 403 to apply without packs:publish and changes nothing', async () => {
    const p = await create(proposer, { kind: 'workflow-chain-pack', artifact: chainPack('private.acme.denied'), provenance: { sourceRunIds: [] } });
    for (const path of [`/v1/proposals/${p.id}/apply`, `/v1/host/sample/proposals/${p.id}/apply`]) {
      const res = await t.http('POST', path, { token: reader, body: {} });
      expect(res.status).toBe(403);
      expect(res.body.error).toBe('forbidden');
    }
    const after = await t.http('GET', `/v1/proposals/${p.id}`, { token: reader });
    expect(after.body.state).toBe('draft');
    expect(after.body.activation).toBeNull();
    expect(await t.moduleRef.get(ArtifactRegistryService).get({ tenant: 'acme' }, 'workflow-chain-pack', 'private.acme.denied')).toBeUndefined();
    expect((await hostEvents('acme', 'proposal.activated')).some((e) => e.payload.proposalId === p.id)).toBe(false);
  });

  it('refuses to apply an artifact malformed for its kind (422) and installs nothing', async () => {
    const p = await create(proposer, { kind: 'workflow-chain-pack', artifact: { name: 'weekly-digest', version: '1.0.0' }, provenance: { sourceRunIds: [] } });
    const res = await t.http('POST', `/v1/proposals/${p.id}/apply`, { token: admin, body: {} });
    expect(res.status).toBe(422);
    expect(res.body.error).toBe('validation_error');
    expect(res.body.details.kind).toBe('workflow-chain-pack');
    expect((await t.http('GET', `/v1/proposals/${p.id}`, { token: reader })).body.state).toBe('draft');
    expect(await t.moduleRef.get(ArtifactRegistryService).get({ tenant: 'acme' }, 'workflow-chain-pack', 'weekly-digest')).toBeUndefined();
  });

  it('refuses a revision that leaves the artifact malformed for its kind (422) and malformed revise bodies (400)', async () => {
    const p = await create(proposer, { kind: 'prompt-template', artifact: { templateId: 'greeter', version: '1.0.0', kind: 'system', text: 'hi' }, provenance: { sourceRunIds: [] } });
    const bad = await t.http('PATCH', `/v1/proposals/${p.id}`, { token: reader, body: { artifact: { templateId: 'Greeter!' } } });
    expect(bad.status).toBe(422);
    expect(bad.body.details.violations.length).toBeGreaterThan(0);
    for (const body of [{}, { artifact: 'text' }, { title: 5 }, { state: 'applied' }, { artifact: [] }]) {
      const res = await t.http('PATCH', `/v1/proposals/${p.id}`, { token: reader, body });
      expect(res.status).toBe(400);
      expect(res.body.error).toBe('validation_error');
    }
    expect((await t.http('GET', `/v1/proposals/${p.id}`, { token: reader })).body.state).toBe('draft');
  });

  it('walks the state machine and refuses the transitions it forbids', async () => {
    const mk = async (name: string) =>
      create(proposer, { kind: 'workflow-chain-pack', artifact: chainPack(`private.acme.${name}`), provenance: { sourceRunIds: [] } });

    const rejected = await mk('sm-rejected');
    const rej = await t.http('POST', `/v1/proposals/${rejected.id}/reject`, { token: reader, body: { note: 'not useful' } });
    expect(rej.status).toBe(200);
    expect(rej.body.state).toBe('rejected');
    for (const [method, path, body] of [
      ['POST', `/v1/proposals/${rejected.id}/apply`, {}],
      ['PATCH', `/v1/proposals/${rejected.id}`, { title: 'again' }],
      ['POST', `/v1/proposals/${rejected.id}/reject`, {}],
    ] as const) {
      const res = await t.http(method, path, { token: admin, body });
      expect(res.status).toBe(409);
      expect(res.body.error).toBe('invalid_proposal_state');
    }
    expect(await t.moduleRef.get(ArtifactRegistryService).get({ tenant: 'acme' }, 'workflow-chain-pack', 'private.acme.sm-rejected')).toBeUndefined();

    const archived = await mk('sm-archived');
    const del = await t.http('DELETE', `/v1/host/sample/proposals/${archived.id}`, { token: reader });
    expect(del.status).toBe(200);
    expect(del.body.state).toBe('archived');
    expect((await t.http('POST', `/v1/proposals/${archived.id}/apply`, { token: admin, body: {} })).status).toBe(409);
    expect((await t.http('PATCH', `/v1/proposals/${archived.id}`, { token: admin, body: { title: 'x' } })).status).toBe(409);
    expect((await t.http('DELETE', `/v1/proposals/${archived.id}`, { token: reader })).body.state).toBe('archived');
    expect(await t.moduleRef.get(ArtifactRegistryService).get({ tenant: 'acme' }, 'workflow-chain-pack', 'private.acme.sm-archived')).toBeUndefined();

    const applied = await mk('sm-applied');
    expect((await t.http('POST', `/v1/proposals/${applied.id}/apply`, { token: admin, body: {} })).status).toBe(200);
    expect((await t.http('POST', `/v1/proposals/${applied.id}/reject`, { token: reader, body: {} })).status).toBe(409);
    expect((await t.http('PATCH', `/v1/proposals/${applied.id}`, { token: reader, body: { title: 'x' } })).status).toBe(409);
    const archivedApplied = await t.http('DELETE', `/v1/proposals/${applied.id}`, { token: reader });
    expect(archivedApplied.body.state).toBe('archived');
    // No rollback: the installed artifact stays until uninstalled through its own path.
    expect(await t.moduleRef.get(ArtifactRegistryService).get({ tenant: 'acme' }, 'workflow-chain-pack', 'private.acme.sm-applied')).toBeDefined();

    const noBody = await mk('sm-nobody');
    expect((await t.http('POST', `/v1/proposals/${noBody.id}/reject`, { token: reader })).status).toBe(200);
    const badReject = await mk('sm-badreject');
    expect((await t.http('POST', `/v1/proposals/${badReject.id}/reject`, { token: reader, body: { note: 7 } })).status).toBe(400);
  });

  it('isolates tenants and workspaces: foreign and unknown ids are 404 everywhere', async () => {
    const p = await create(proposer, { kind: 'workflow-chain-pack', artifact: chainPack('private.acme.tenancy'), provenance: { sourceRunIds: [] } });
    const wsA = await t.key({ tenant: 'acme', workspace: 'ws-a', principal: 'wa', scopes: ALL });
    const wsB = await t.key({ tenant: 'acme', workspace: 'ws-b', principal: 'wb', scopes: ALL });
    const inA = await create(wsA, { kind: 'automation', artifact: { name: 'in-a' }, provenance: { sourceRunIds: [] } });
    expect(inA.owner).toEqual({ tenant: 'acme', workspace: 'ws-a', principal: 'wa' });

    for (const [token, id] of [
      [otherTenant, p.id],
      [otherTenant, inA.id],
      [wsB, inA.id],
      [wsB, p.id],
      [admin, '00000000-0000-4000-8000-000000000000'],
      [admin, 'not-a-uuid'],
    ] as const) {
      for (const [method, path, body] of [
        ['GET', `/v1/proposals/${id}`, undefined],
        ['GET', `/v1/host/sample/proposals/${id}`, undefined],
        ['PATCH', `/v1/proposals/${id}`, { title: 'x' }],
        ['POST', `/v1/proposals/${id}/apply`, {}],
        ['POST', `/v1/proposals/${id}/reject`, {}],
        ['DELETE', `/v1/proposals/${id}`, undefined],
      ] as const) {
        const res = await t.http(method, path, { token, body });
        expect([method, path, res.status]).toEqual([method, path, 404]);
        expect(res.body.error).toBe('not_found');
      }
    }
    expect((await t.http('GET', '/v1/proposals', { token: otherTenant })).body.proposals).toEqual([]);
    const listB = await t.http('GET', '/v1/proposals', { token: wsB });
    expect(listB.body.proposals.map((x: { id: string }) => x.id)).not.toContain(inA.id);
    const listA = await t.http('GET', '/v1/proposals', { token: wsA });
    expect(listA.body.proposals.map((x: { id: string }) => x.id)).toEqual([inA.id]);
    // Nothing of the foreign attempts changed the proposal.
    expect((await t.http('GET', `/v1/proposals/${p.id}`, { token: admin })).body.state).toBe('draft');
  });

  it('sets duplicateOf for a restated installed artifact and for another open proposal', async () => {
    const artifact = chainPack('private.acme.dupe');
    const first = await create(proposer, { kind: 'workflow-chain-pack', artifact, provenance: { sourceRunIds: [] } });
    expect(first.duplicateOf).toBeNull();
    const second = await create(proposer, { kind: 'workflow-chain-pack', artifact, provenance: { sourceRunIds: [] } });
    expect(second.duplicateOf).toBe(`proposal:${first.id}`);
    const applied = await t.http('POST', `/v1/proposals/${first.id}/apply`, { token: admin, body: {} });
    const third = await create(proposer, { kind: 'workflow-chain-pack', artifact, provenance: { sourceRunIds: [] } });
    expect(third.duplicateOf).toBe(applied.body.installedArtifactRef);
    // Same registry name, different bytes: it would replace the installed one.
    const fourth = await create(proposer, { kind: 'workflow-chain-pack', artifact: { ...artifact, version: '2.0.0' }, provenance: { sourceRunIds: [] } });
    expect(fourth.duplicateOf).toBe(applied.body.installedArtifactRef);
    const created = (await hostEvents('acme', 'proposal.created')).find((e) => e.payload.proposalId === second.id);
    expect(created!.payload.duplicateOf).toBe(`proposal:${first.id}`);
  });

  it('keeps the submitted artifact bytes: GET serves them verbatim, apply installs and hashes them', async () => {
    // Its own tenant, so the templates it installs stay out of the other tests' listings.
    const proposer = await t.key({ tenant: 'bytes', principal: 'learner', scopes: ['proposals:propose', 'proposals:read'] });
    const reader = await t.key({ tenant: 'bytes', principal: 'reviewer', scopes: ['proposals:read', 'proposals:review'] });
    const admin = await t.key({ tenant: 'bytes', principal: 'alice', scopes: ALL });
    // Keys deliberately unsorted, odd whitespace and an escaped character: a re-serialization
    // (jsonb, canonical JSON or JSON.stringify) would change every one of them.
    const artifactText = '{ "version":"1.0.0",  "templateId" : "bytes.exact",\n "kind":"system", "text":"Say \\u0041 {{x}}", "tags":["z","a"] }';
    const body = `{"provenance":{"sourceRunIds":["run-1"]},"artifact":${artifactText},"kind":"prompt-template","title":"bytes"}`;
    const created = await t.http('POST', '/v1/proposals', { token: proposer, rawBody: body, headers: { 'content-type': 'application/json' } });
    expect(created.status).toBe(201);
    expect(created.text).toContain(`"artifact":${artifactText}`);
    expect(schemas.validate('proposal', created.body)).toEqual([]);

    for (const url of [`/v1/proposals/${created.body.id}`, `/v1/host/sample/proposals/${created.body.id}`]) {
      const got = await t.http('GET', url, { token: reader });
      expect(got.status).toBe(200);
      expect(got.headers['content-type']).toMatch(/^application\/json/);
      expect(got.text).toContain(`"artifact":${artifactText}`);
      expect(got.body.artifact).toEqual(JSON.parse(artifactText));
    }
    const listed = await t.http('GET', '/v1/proposals?kind=prompt-template', { token: reader });
    expect(listed.text).toContain(`"artifact":${artifactText}`);

    const applied = await t.http('POST', `/v1/proposals/${created.body.id}/apply`, { token: admin, body: {} });
    expect(applied.status).toBe(200);
    // The client's hash of its own bytes is the installed ref.
    expect(applied.body.installedArtifactRef).toBe(textHash(artifactText));
    expect(applied.text).toContain(`"artifact":${artifactText}`);
    expect(await t.moduleRef.get(ArtifactRegistryService).bytes({ tenant: 'bytes' }, 'prompt-template', 'bytes.exact')).toBe(artifactText);
    const after = await t.http('GET', `/v1/proposals/${created.body.id}`, { token: reader });
    expect(after.text).toContain(`"artifact":${artifactText}`);
    expect(after.body.activation.installedArtifactRef).toBe(textHash(artifactText));
    // The installed template is served as those bytes too.
    const resolved = await t.http('GET', '/v1/prompt-templates/bytes.exact', { token: reader });
    expect(resolved.status).toBe(200);
    expect(resolved.text).toContain(`"template":${artifactText}`);
    expect(resolved.body.ref).toBe(textHash(artifactText));

    // A revision keeps its own submitted bytes the same way.
    const p2 = await create(proposer, { kind: 'prompt-template', artifact: { templateId: 'bytes.revised', version: '1.0.0', kind: 'system', text: 'a' }, provenance: { sourceRunIds: [] } });
    const revisedText = '{"text":"b" ,"kind":"system","version":"1.0.1","templateId":"bytes.revised"}';
    const revised = await t.http('PATCH', `/v1/proposals/${p2.id}`, { token: reader, rawBody: `{"note":"n","artifact":${revisedText}}`, headers: { 'content-type': 'application/json' } });
    expect(revised.status).toBe(200);
    expect(revised.text).toContain(`"artifact":${revisedText}`);
    const applied2 = await t.http('POST', `/v1/proposals/${p2.id}/apply`, { token: admin, body: {} });
    expect(applied2.body.installedArtifactRef).toBe(textHash(revisedText));
    expect(await t.moduleRef.get(ArtifactRegistryService).bytes({ tenant: 'bytes' }, 'prompt-template', 'bytes.revised')).toBe(revisedText);
  });

  it('makes a prompt template resolvable only once its proposal is applied', async () => {
    const template = { templateId: 'weekly.summary', version: '1.0.0', kind: 'system', text: 'Summarize {{topic}}', variables: [{ name: 'topic', type: 'string', required: true }] };
    const p = await create(proposer, { kind: 'prompt-template', artifact: template, provenance: { sourceRunIds: [] } });
    expect((await t.http('GET', '/v1/prompt-templates/weekly.summary', { token: reader })).status).toBe(404);
    expect((await t.http('GET', '/v1/prompt-templates', { token: reader })).body.templates).toEqual([]);
    expect((await t.http('POST', `/v1/proposals/${p.id}/apply`, { token: admin, body: {} })).status).toBe(200);
    const resolved = await t.http('GET', '/v1/prompt-templates/weekly.summary', { token: reader });
    expect(resolved.status).toBe(200);
    expect(resolved.body.template).toEqual(template);
    expect(resolved.body.ref).toBe(sha256Ref(template));
    expect((await t.http('GET', '/v1/prompt-templates/weekly.summary?version=1.0.0', { token: reader })).status).toBe(200);
    expect((await t.http('GET', '/v1/prompt-templates/weekly.summary?version=9.9.9', { token: reader })).status).toBe(404);
    expect((await t.http('GET', '/v1/prompt-templates/weekly.summary?version=latest', { token: reader })).status).toBe(400);
    expect((await t.http('GET', '/v1/prompt-templates/weekly.summary', { token: otherTenant })).status).toBe(404);
  });

  it('schedules an automation only once applied, honours enabled:false, and fires a due slot once', async () => {
    const automation = { name: 'nightly-report', schedule: { intervalMs: 60000 }, action: { type: 'start-run', workflowId: 'reports.nightly', inputs: { days: 1 } } };
    const p = await create(proposer, { kind: 'automation', artifact: automation, provenance: { sourceRunIds: [] } });
    expect((await t.http('GET', '/v1/automations', { token: reader })).body.automations).toEqual([]);
    expect((await t.http('POST', `/v1/proposals/${p.id}/apply`, { token: admin, body: {} })).status).toBe(200);
    const listed = await t.http('GET', '/v1/automations', { token: reader });
    expect(listed.body.automations).toHaveLength(1);
    expect(listed.body.automations[0]).toMatchObject({ name: 'nightly-report', enabled: true, runCount: 0 });
    expect(listed.body.automations[0].nextRunAt).not.toBeNull();

    const paused = await create(proposer, { kind: 'automation', artifact: { ...automation, name: 'paused-report', enabled: false }, provenance: { sourceRunIds: [] } });
    expect((await t.http('POST', `/v1/proposals/${paused.id}/apply`, { token: admin, body: {} })).status).toBe(200);

    const runner = t.moduleRef.get(AutomationRunnerService);
    expect(await runner.fireDue('acme')).toEqual([]);
    await t.ds.query(`UPDATE "automation_schedule" SET "next_run_at" = now() - interval '1 hour' WHERE "tenant" = 'acme' AND "enabled"`);
    const fired = await runner.fireDue('acme');
    expect(fired.map((f) => f.name)).toEqual(['nightly-report']);
    expect(await runner.fireDue('acme')).toEqual([]);
    const run = await t.moduleRef.get(RunService).find({ tenant: 'acme' }, fired[0].runId);
    // reports.nightly is not installed for the tenant: the slot is recorded as a failed run saying why.
    expect(run).toMatchObject({ kind: 'automation', status: 'failed', metadata: { automation: 'nightly-report', error: { code: 'not_found' } } });
    const after = (await t.http('GET', '/v1/automations', { token: reader })).body.automations as Array<Record<string, unknown>>;
    expect(after.find((a) => a.name === 'nightly-report')).toMatchObject({ runCount: 1, lastRunId: fired[0].runId, lastRunStatus: 'failed' });
    expect(after.find((a) => a.name === 'paused-report')).toMatchObject({ enabled: false, nextRunAt: null, runCount: 0 });
    expect((await t.http('GET', '/v1/automations', { token: otherTenant })).body.automations).toEqual([]);
  });

  it('synthesizes one workflow-chain draft per repeated tool sequence, idempotently', async () => {
    const events = t.moduleRef.get(EventLogService);
    const runs = t.moduleRef.get(RunService);
    const owner = systemPrincipal('synth');
    const record = async (tools: string[]) => {
      const run = await runs.create(owner, 'tool-session');
      for (const toolId of tools) await events.append(owner, run.runId, 'agent.toolCalled', { toolId });
      return run.runId;
    };
    const r1 = await record(['mcp:files/read', 'mcp:files/summarize']);
    const r2 = await record(['mcp:files/read', 'mcp:files/summarize']);
    await record(['mcp:files/read']);
    await record(['mcp:mail/send', 'mcp:files/read']);
    const synth = await t.key({ tenant: 'synth', principal: 'ops', scopes: ALL });

    const first = await t.http('POST', '/v1/host/sample/proposals/synthesize', { token: synth });
    expect(first.status).toBe(200);
    expect(first.body.created).toHaveLength(1);
    const draft = (await t.http('GET', `/v1/proposals/${first.body.created[0]}`, { token: synth })).body;
    expect(draft).toMatchObject({ kind: 'workflow-chain-pack', state: 'draft', owner: { tenant: 'synth', principal: 'system' } });
    expect(draft.provenance.sourceRunIds).toEqual([r1, r2].sort());
    expect(schemas.validate('proposal', draft)).toEqual([]);
    expect(schemas.validate('workflow-chain-pack-manifest', draft.artifact)).toEqual([]);

    // The same evidence never yields a second draft: not on a re-run, not after the draft is rejected.
    const second = await t.http('POST', '/v1/proposals/synthesis-runs', { token: synth });
    expect(second.body).toMatchObject({ created: [], alreadyProposed: 1 });
    await t.http('POST', `/v1/proposals/${draft.id}/reject`, { token: synth, body: {} });
    const third = await t.http('POST', '/v1/proposals/synthesis-runs', { token: synth });
    expect(third.body.created).toEqual([]);
    expect((await t.http('GET', '/v1/proposals', { token: synth })).body.proposals).toHaveLength(1);

    // Another tenant's traces are not read for this tenant, and vice versa.
    expect((await t.http('POST', '/v1/proposals/synthesis-runs', { token: otherTenant })).body.created).toEqual([]);
    expect((await t.http('POST', '/v1/proposals/synthesis-runs', { token: reader })).status).toBe(403);
    const junk = await t.http('POST', '/v1/proposals/synthesis-runs', { token: synth, body: { since: 'yesterday' } });
    expect(junk.status).toBe(400);
    expect(junk.body.error).toBe('validation_error');
    expect((await t.http('POST', '/v1/proposals/synthesis-runs', { token: synth, body: {} })).status).toBe(200);
  });

  it('runs synthesis from the scheduler, and racing passes still create one draft per evidence', async () => {
    const events = t.moduleRef.get(EventLogService);
    const runs = t.moduleRef.get(RunService);
    const owner = systemPrincipal('sched', 'ws-1');
    for (let i = 0; i < 3; i++) {
      const run = await runs.create(owner, 'tool-session');
      for (const toolId of ['openwop:core.fetch', 'openwop:core.parse', 'openwop:core.store']) await events.append(owner, run.runId, 'agent.toolCalled', { toolId });
    }
    const racing = await Promise.all([1, 2, 3].map(() => t.moduleRef.get(SynthesisService).runFor({ tenant: 'sched' })));
    expect(racing.flatMap((r) => r.created)).toHaveLength(1);
    const key = await t.key({ tenant: 'sched', workspace: 'ws-1', principal: 'ops', scopes: ['proposals:read'] });
    const listed = (await t.http('GET', '/v1/proposals', { token: key })).body.proposals;
    expect(listed).toHaveLength(1);
    expect(listed[0].owner).toEqual({ tenant: 'sched', workspace: 'ws-1', principal: 'system' });
    expect(listed[0].provenance.sourceRunIds).toHaveLength(3);

    // The scheduled task (host-wide, leased) runs the same pass: nothing new for the same evidence.
    const tasks = t.moduleRef.get(PeriodicTaskService);
    await tasks.trigger('proposals.synthesis');
    await tasks.tick();
    const [{ last_run_at, last_error }] = await t.ds.query(`SELECT "last_run_at", "last_error" FROM "scheduled_task" WHERE "name" = 'proposals.synthesis'`);
    expect(last_run_at).not.toBeNull();
    expect(last_error).toBeNull();
    expect((await t.http('GET', '/v1/proposals', { token: key })).body.proposals).toHaveLength(1);
  });

  it('a failing synthesizer degrades only its own contribution', async () => {
    const svc = t.moduleRef.get(SynthesisService);
    // Plug a broken contribution in beside the built-in one (as a faulty plugin would be).
    const registry = (svc as unknown as { synthesizers: Map<string, { synthesize(): Promise<never> }> }).synthesizers;
    registry.set('broken', { synthesize: async () => Promise.reject(new Error('model offline')) });
    try {
      const owner = systemPrincipal('degraded');
      for (let i = 0; i < 2; i++) {
        const run = await t.moduleRef.get(RunService).create(owner, 'tool-session');
        for (const toolId of ['mcp:a/x', 'mcp:a/y']) await t.moduleRef.get(EventLogService).append(owner, run.runId, 'agent.toolCalled', { toolId });
      }
      const report = await svc.runFor({ tenant: 'degraded' });
      expect(report.failures).toEqual([{ synthesizer: 'broken', message: 'model offline' }]);
      expect(report.created).toHaveLength(1);
      const ready = await t.http('GET', '/readyz');
      expect(JSON.stringify(ready.body)).toContain('proposal-synthesizer:broken');
    } finally {
      registry.delete('broken');
    }
  });

  it('applies once when two activations race', async () => {
    const p = await create(proposer, { kind: 'workflow-chain-pack', artifact: chainPack('private.acme.race'), provenance: { sourceRunIds: [] } });
    const results = await Promise.all([1, 2, 3].map(() => t.http('POST', `/v1/proposals/${p.id}/apply`, { token: admin, body: {} })));
    expect(results.map((r) => r.status)).toEqual([200, 200, 200]);
    expect(new Set(results.map((r) => r.body.installedArtifactRef)).size).toBe(1);
    expect((await hostEvents('acme', 'proposal.activated')).filter((e) => e.payload.proposalId === p.id)).toHaveLength(1);
  });

  it('advertises agents.proposals with the installable kinds, and the typed client lists proposals', async () => {
    const doc = await t.http('GET', '/.well-known/openwop');
    expect(doc.body.agents.proposals).toEqual({
      artifactKinds: ['agent-pack', 'workflow-chain-pack', 'prompt-template', 'automation'],
      duplicationDetection: true,
      activation: 'direct-rbac',
    });
    expect(schemas.validate('capabilities', doc.body)).toEqual([]);

    const { data, response } = await t.api(reader).GET('/v1/proposals', { params: { query: { state: 'draft' } } });
    expect(response.status).toBe(200);
    expect(data!.proposals.length).toBeGreaterThan(0);
  });
});
