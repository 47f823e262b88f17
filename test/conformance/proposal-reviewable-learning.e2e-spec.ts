/**
 * What the official `proposal-reviewable-learning` scenario asserts (RFC 0096), checked with the
 * project's own code: the server-free schema legs against the bundled official schemas, and the
 * behavioral leg against the real host under the suite's conditions (seams on, a default key that
 * lacks the activation scope, and at least one `draft` for that key's tenant).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { createTestApp, TestApp } from '../support/test-app';

const SCHEMAS_DIR = path.resolve(__dirname, '../../schemas/openwop');
const loadSchema = (name: string) => JSON.parse(fs.readFileSync(path.join(SCHEMAS_DIR, name), 'utf8')) as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

describe('proposal-reviewable-learning: capability advertisement (server-free)', () => {
  const proposals = loadSchema('capabilities.schema.json').properties.agents.properties.proposals;

  it('capabilities schema declares agents.proposals with its required sub-flags', () => {
    for (const flag of ['artifactKinds', 'duplicationDetection', 'activation']) expect(proposals.properties[flag]).toBeDefined();
    expect(proposals.required).toEqual(expect.arrayContaining(['artifactKinds', 'activation']));
  });

  it('the `rule` artifact kind is not in the enum', () => {
    const kinds = proposals.properties.artifactKinds.items.enum as string[];
    expect(kinds).toEqual(expect.arrayContaining(['agent-pack', 'workflow-chain-pack', 'prompt-template', 'automation']));
    expect(kinds).not.toContain('rule');
  });
});

describe('proposal-reviewable-learning: Proposal shape (server-free)', () => {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  const validate = ajv.compile(loadSchema('proposal.schema.json'));
  const good = {
    id: 'prop-1',
    kind: 'workflow-chain-pack',
    state: 'draft',
    artifact: { name: 'weekly-digest', version: '1.0.0' },
    provenance: { sourceRunIds: ['run-a', 'run-b'] },
    owner: { tenant: 'acme' },
    createdAt: '2026-06-13T00:00:00Z',
  };

  it('validates a conforming draft proposal', () => {
    expect(validate(good)).toBe(true);
  });

  it('rejects an unknown state, the dropped `rule` kind and an owner without tenant', () => {
    expect(validate({ ...good, state: 'live' })).toBe(false);
    expect(validate({ ...good, kind: 'rule' })).toBe(false);
    expect(validate({ ...good, owner: { workspace: 'x' } })).toBe(false);
  });
});

describe('proposal-reviewable-learning: content-free events (server-free)', () => {
  const runEvent = loadSchema('run-event.schema.json');
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  ajv.addSchema(loadSchema('run-event-payloads.schema.json'), 'payloads');

  it('proposal.created and proposal.activated are in the RunEventType enum', () => {
    expect(runEvent.$defs.RunEventType.enum).toEqual(expect.arrayContaining(['proposal.created', 'proposal.activated']));
  });

  it('proposal.created is content-free: an artifact body and rationale text are rejected', () => {
    const created = ajv.getSchema('payloads#/$defs/proposalCreated')!;
    expect(created({ proposalId: 'p1', kind: 'agent-pack', sourceRunIds: ['r1'], duplicateOf: null })).toBe(true);
    expect(created({ proposalId: 'p1', kind: 'agent-pack', artifact: { x: 1 } })).toBe(false);
    expect(created({ proposalId: 'p1', kind: 'agent-pack', rationale: 'because' })).toBe(false);
  });
});

describe('proposal-reviewable-learning: behavioral (against the host)', () => {
  let t: TestApp;
  /** The suite's default bearer key: broad read/run scopes, but not the activation scope. */
  let conformanceKey: string;
  let seededId: string;

  beforeAll(async () => {
    t = await createTestApp({ env: { OPENWOP_TEST_SEAMS: 'true' } });
    conformanceKey = await t.key({
      tenant: 'conformance',
      principal: 'suite',
      scopes: ['runs:read', 'runs:create', 'tools:read', 'proposals:read', 'proposals:review', 'goals:read', 'goals:write', 'approvals:respond'],
    });
    // Seed the draft the behavioral leg needs, as an external synthesizer of that tenant would.
    const learner = await t.key({ tenant: 'conformance', principal: 'learner', scopes: ['proposals:propose'] });
    const seeded = await t.http('POST', '/v1/proposals', {
      token: learner,
      body: {
        kind: 'prompt-template',
        title: 'Reviewable-learning demo draft',
        artifact: { templateId: 'conformance.demo', version: '1.0.0', kind: 'system', text: 'You are helpful.' },
        provenance: { sourceRunIds: ['run-demo'] },
      },
    });
    expect(seeded.status).toBe(201);
    seededId = seeded.body.id;
  });

  afterAll(async () => {
    await t?.close();
  });

  it('apply without the activation scope is denied (403) and installs nothing', async () => {
    // The behavior gate: agents.proposals advertised at the document root.
    const doc = await t.http('GET', '/.well-known/openwop');
    expect(doc.body.agents?.proposals).toBeDefined();

    const list = await t.http('GET', '/v1/host/sample/proposals?state=draft', { token: conformanceKey });
    expect(list.status).toBe(200);
    const proposals = list.body.proposals as Array<{ id: string }>;
    expect(proposals.length).toBeGreaterThan(0);

    const res = await t.http('POST', `/v1/host/sample/proposals/${proposals[0].id}/apply`, { token: conformanceKey, body: {} });
    expect(res.status).toBe(403);
    expect(Object.keys(res.body).sort()).toEqual(expect.arrayContaining(['error', 'message']));

    // What the reference host also checks: nothing changed, nothing installed.
    const after = await t.http('GET', `/v1/host/sample/proposals/${seededId}`, { token: conformanceKey });
    expect(after.body.state).toBe('draft');
    expect(after.body.activation).toBeNull();
    expect((await t.http('GET', '/v1/prompt-templates/conformance.demo', { token: conformanceKey })).status).toBe(404);
  });

  it('no re-synthesis (the invariant the scenario header names): the installed artifact byte-matches the last persisted one', async () => {
    // A reviewer revises through the seam with keys out of canonical order; an authorized principal applies.
    const publisher = await t.key({ tenant: 'conformance', principal: 'publisher', scopes: ['proposals:read', 'packs:publish'] });
    const revisedText = '{"version":"1.0.1","text":"You are concise.","templateId":"conformance.demo","kind":"system"}';
    const revised = await t.http('PATCH', `/v1/host/sample/proposals/${seededId}`, {
      token: conformanceKey,
      rawBody: `{"artifact":${revisedText}}`,
      headers: { 'content-type': 'application/json' },
    });
    expect(revised.status).toBe(200);
    expect(revised.body.state).toBe('revised');
    const applied = await t.http('POST', `/v1/host/sample/proposals/${seededId}/apply`, { token: publisher, body: {} });
    expect(applied.status).toBe(200);
    const stored = await t.http('GET', `/v1/host/sample/proposals/${seededId}`, { token: conformanceKey });
    expect(stored.body.state).toBe('applied');
    // The persisted artifact is served as it was sent, and the ref is the hash of exactly those bytes.
    expect(stored.text).toContain(`"artifact":${revisedText}`);
    const { createHash } = await import('node:crypto');
    expect(stored.body.activation.installedArtifactRef).toBe(`sha256:${createHash('sha256').update(revisedText).digest('hex')}`);
    const installed = await t.http('GET', '/v1/prompt-templates/conformance.demo', { token: conformanceKey });
    expect(installed.status).toBe(200);
    expect(installed.body.template).toEqual(JSON.parse(revisedText));
    expect(installed.body.ref).toBe(stored.body.activation.installedArtifactRef);
  });

  it('the seam paths need a credential (never 200 unauthenticated)', async () => {
    expect((await t.http('GET', '/v1/host/sample/proposals?state=draft')).status).toBe(401);
    expect((await t.http('POST', `/v1/host/sample/proposals/${seededId}/apply`, { body: {} })).status).toBe(401);
  });
});
