/**
 * Asserts what the official `goal-standing-continuation` scenario (RFC 0097, invariants
 * `goal-continuation-bounded` and `goal-completion-judge-only`) asserts, in order: the server-free
 * schema legs against the bundled schemas, then the two behavioural legs against this host's seams
 * (OPENWOP_TEST_SEAMS=true, a key with goals:read + goals:write whose tenant has an active goal).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { SCHEMAS_ROOT, SchemaRegistry } from '../../src/platform/schemas/schema-registry';
import { createTestApp, TestApp } from '../support/test-app';

function loadSchema(name: string): Record<string, unknown> {
  return JSON.parse(readFileSync(join(SCHEMAS_ROOT, 'openwop', name), 'utf8')) as Record<string, unknown>;
}

describe('conformance: goal-standing-continuation (server-free legs)', () => {
  it('capabilities schema declares agents.goals with its required sub-flags', () => {
    const caps = loadSchema('capabilities.schema.json') as { properties: { agents: { properties: { goals: { properties: Record<string, unknown>; required: string[] } } } } };
    const goals = caps.properties.agents.properties.goals;
    for (const flag of ['judge', 'continuation', 'requiresBounds']) expect(goals.properties[flag]).toBeDefined();
    expect(goals.required).toEqual(expect.arrayContaining(['judge', 'continuation']));
  });

  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  const validate = ajv.compile(loadSchema('goal.schema.json'));
  const good = {
    id: 'goal-1',
    objective: 'ship the release checklist',
    state: 'active',
    completion: { check: 'verifier', verifierRef: 'vf-1' },
    continuation: { mode: 'schedule', armRef: 'job-1' },
    bounds: { maxLoopIterations: 7 },
    owner: { tenant: 'acme' },
    createdAt: '2026-06-13T00:00:00Z',
  };

  it('validates a conforming active goal', () => {
    expect(validate(good)).toBe(true);
  });

  it('rejects an unknown state, an unknown judge, and a bad continuation mode', () => {
    expect(validate({ ...good, state: 'done' })).toBe(false);
    expect(validate({ ...good, completion: { check: 'vibes' } })).toBe(false);
    expect(validate({ ...good, continuation: { mode: 'whenever' } })).toBe(false);
  });

  it('goal.evaluated and goal.closed are in the RunEventType enum', () => {
    const en = (loadSchema('run-event.schema.json').$defs as Record<string, { enum?: string[] }>).RunEventType?.enum ?? [];
    expect(en).toContain('goal.evaluated');
    expect(en).toContain('goal.closed');
  });

  it('goal.evaluated is content-free; goal.closed requires a terminal finalState', () => {
    const a = new Ajv2020({ strict: false, allErrors: true });
    addFormats(a);
    a.addSchema(loadSchema('run-event-payloads.schema.json'), 'payloads');
    const evaluated = a.getSchema('payloads#/$defs/goalEvaluated')!;
    expect(evaluated({ goalId: 'g1', satisfied: false, confidence: 0.4, runId: 'r1', iterations: 2 })).toBe(true);
    expect(evaluated({ goalId: 'g1', satisfied: false, runId: 'r1', iterations: 2, objective: 'ship it' })).toBe(false);
    const closed = a.getSchema('payloads#/$defs/goalClosed')!;
    expect(closed({ goalId: 'g1', finalState: 'bound-exceeded' })).toBe(true);
    expect(closed({ goalId: 'g1', finalState: 'active' })).toBe(false);
  });
});

describe('conformance: goal-standing-continuation (behavioural legs)', () => {
  let t: TestApp;
  let key: string;
  const readCapabilityFamily = async (name: string) => {
    const res = await t.http('GET', '/.well-known/openwop');
    return res.status === 200 ? (res.body as Record<string, Record<string, unknown>>)[name] : undefined;
  };

  beforeAll(async () => {
    t = await createTestApp({ env: { OPENWOP_TEST_SEAMS: 'true' } });
    key = await t.key({ tenant: 'conformance', principal: 'suite', scopes: ['goals:read', 'goals:write'] });
    // The operator's setup step: the conformance tenant holds at least one active goal.
    const seeded = await t.http('POST', '/v1/goals', {
      token: key,
      body: {
        objective: 'keep the conformance checklist green',
        completion: { check: 'host' },
        criteria: { type: 'object', required: ['green'], properties: { green: { const: true } } },
        continuation: { mode: 'manual' },
        bounds: { maxLoopIterations: 10, runTimeoutMs: 600000 },
      },
    });
    expect(seeded.status).toBe(201);
  });

  afterAll(async () => {
    await t?.close();
  });

  it('advertises agents.goals at the discovery root (the behaviour gate), mirrored under the deprecated capabilities wrapper', async () => {
    const agents = (await readCapabilityFamily('agents')) as { goals?: { requiresBounds?: boolean; judge?: string; continuation?: string[] } } | undefined;
    expect(agents?.goals).toBeDefined();
    expect(agents!.goals!.requiresBounds).not.toBe(false);
    const doc = await t.http('GET', '/.well-known/openwop');
    expect(doc.body.capabilities.agents).toEqual(doc.body.agents);
    expect(SchemaRegistry.shared().validate('capabilities', doc.body)).toEqual([]);
  });

  it('a goal cannot be created without bounds when requiresBounds is advertised (422)', async () => {
    const res = await t.http('POST', '/v1/host/sample/goals', {
      token: key,
      body: { objective: 'unbounded work', completion: { check: 'host' }, continuation: { mode: 'manual' } },
    });
    expect(res.status).toBe(422);
    expect(Object.keys(res.body).sort()).toEqual(['details', 'error', 'message']);
  });

  it('a client MUST NOT set state: satisfied directly', async () => {
    const list = await t.http('GET', '/v1/host/sample/goals?state=active', { token: key });
    expect(list.status).toBe(200);
    const goals = (list.body as { goals: Array<{ id: string; state: string }> }).goals;
    expect(goals.length).toBeGreaterThan(0);
    const res = await t.http('POST', `/v1/host/sample/goals/${goals[0].id}`, { token: key, body: { state: 'satisfied' } });
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.status).toBe(422);
    const after = await t.http('GET', `/v1/host/sample/goals/${goals[0].id}`, { token: key });
    expect(after.body.state).toBe('active');
  });

  it('the goal seams refuse unauthenticated callers (never 200)', async () => {
    for (const [method, url] of [
      ['GET', '/v1/host/sample/goals'],
      ['POST', '/v1/host/sample/goals'],
    ]) {
      const res = await t.http(method, url, { body: method === 'POST' ? { objective: 'x' } : undefined });
      expect(res.status).toBe(401);
    }
  });
});
