/** Asserts what the official `tool-session-lifecycle` scenario (RFC 0078 §D) asserts, plus payload validity. */
import { createTestApp, TestApp } from '../support/test-app';
import { SchemaRegistry } from '../../src/platform/schemas/schema-registry';
import { CONFORMANCE_CONFIG, CONFORMANCE_KEY_SCOPES, TOOL_CONTENT_FORBIDDEN } from '../tool-catalog/conformance-kit';
import { expectSchemaValid } from '../runs/run-kit';

interface TestEvent {
  eventId: string;
  runId: string;
  type: string;
  payload: Record<string, unknown>;
  timestamp: string;
  sequence: number;
}

const PAYLOADS = 'https://openwop.dev/spec/v1/run-event-payloads.schema.json';

describe('conformance: tool-session-lifecycle', () => {
  let t: TestApp;
  let key: string;

  beforeAll(async () => {
    t = await createTestApp({ env: { OPENWOP_TEST_SEAMS: 'true' }, configFile: CONFORMANCE_CONFIG });
    key = await t.key({ scopes: CONFORMANCE_KEY_SCOPES });
  });

  afterAll(async () => {
    await t?.close();
  });

  it('advertises sessionLifecycle and serves the event-log probe', async () => {
    expect((await t.http('GET', '/.well-known/openwop')).body.toolCatalog.sessionLifecycle).toBe(true);
    const probe = await t.http('GET', '/v1/host/sample/test/runs/__probe__/events', { token: key });
    expect(probe.status).toBe(200);
  });

  it('brackets the call events of a session between opened and closed, content-free', async () => {
    const driven = await t.http('POST', '/v1/host/sample/tools/session-run', { token: key, body: {} });
    expect([404, 405]).not.toContain(driven.status);
    expect(typeof driven.body.runId).toBe('string');
    const read = await t.http('GET', `/v1/host/sample/test/runs/${encodeURIComponent(driven.body.runId)}/events`, { token: key });
    expect(read.status).toBe(200);
    const events = (read.body.events as TestEvent[]).slice().sort((a, b) => a.sequence - b.sequence);
    const opened = events.filter((e) => e.type === 'tool.session.opened');
    const closed = events.filter((e) => e.type === 'tool.session.closed');
    expect(opened.length).toBeGreaterThanOrEqual(1);
    expect(closed.length).toBeGreaterThanOrEqual(1);
    const calls = events.filter((e) => e.type === 'agent.toolCalled' || e.type === 'agent.toolReturned' || e.type.startsWith('tool.call'));
    expect(calls.length).toBeGreaterThan(0); // the host's sessions always make calls: keep the leg non-vacuous
    expect(opened[0].sequence).toBeLessThan(calls[0].sequence);
    expect(closed[closed.length - 1].sequence).toBeGreaterThan(calls[calls.length - 1].sequence);
    expect(typeof opened[0].payload.sessionId).toBe('string');
    expect(opened[0].payload.sessionId).toBe(closed[0].payload.sessionId);
    expect(typeof opened[0].payload.toolId).toBe('string');
    expect(typeof closed[0].payload.toolId).toBe('string');
    expect(['completed', 'failed', 'aborted', 'expired']).toContain(closed[0].payload.outcome);
    for (const e of [opened[0], closed[0]]) for (const k of TOOL_CONTENT_FORBIDDEN) expect(e.payload).not.toHaveProperty(k);
    expect(driven.body.sessionId).toBe(opened[0].payload.sessionId);
    expect(driven.body.toolId).toBe(opened[0].payload.toolId);

    // Beyond the scenario: payloads validate against run-event-payloads $defs.
    const schemas = SchemaRegistry.shared();
    const def: Record<string, string> = {
      'tool.session.opened': 'toolSessionOpened',
      'tool.session.closed': 'toolSessionClosed',
      'agent.toolCalled': 'agentToolCalled',
      'agent.toolReturned': 'agentToolReturned',
    };
    for (const e of events.filter((x) => def[x.type])) expect(schemas.validateWith({ $ref: `${PAYLOADS}#/$defs/${def[e.type]}` }, e.payload)).toEqual([]);

    // Beyond the scenario: the session is a real one-node run of the engine. Its bracket sits inside
    // the run's lifecycle events (every event a valid RunEvent), and its id is a run of GET /v1/runs/{id}, terminal.
    expect(events.map((e) => e.type)).toEqual([
      'run.started',
      'node.started',
      'tool.session.opened',
      'agent.toolCalled',
      'agent.toolReturned',
      'agent.toolCalled',
      'agent.toolReturned',
      'tool.session.closed',
      'node.completed',
      'run.completed',
    ]);
    expectSchemaValid(events as Parameters<typeof expectSchemaValid>[0]);
    const run = await t.http('GET', `/v1/runs/${driven.body.runId}`, { token: key });
    expect(run.status).toBe(200);
    expect(run.body).toMatchObject({ runId: driven.body.runId, workflowId: 'openwop-host.tool-session', status: 'completed', nodeStates: { session: { status: 'completed' } } });
    const polled = await t.http('GET', `/v1/runs/${driven.body.runId}/events/poll?lastSequence=0`, { token: key });
    expect(polled.body.events.map((e: TestEvent) => e.type)).toEqual(events.map((e) => e.type));

    const reset = await t.http('POST', '/v1/host/sample/test/reset', { token: key });
    expect(reset.status).toBeLessThan(500);
  });

  it('keeps the session seam authenticated and answers an unknown or hidden tool with 404', async () => {
    expect((await t.http('POST', '/v1/host/sample/tools/session-run', { body: {} })).status).toBe(401);
    const hidden = await t.http('POST', '/v1/host/sample/tools/session-run', { token: key, body: { toolId: 'x-host-conformance-scoped' } });
    const unknown = await t.http('POST', '/v1/host/sample/tools/session-run', { token: key, body: { toolId: 'x-host-nope-nothing' } });
    expect(hidden.status).toBe(404);
    expect(hidden.body).toEqual(unknown.body);
  });

  it('refuses a malformed session-run body', async () => {
    const res = await t.http('POST', '/v1/host/sample/tools/session-run', { token: key, body: { toolId: 42, extra: true } });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('validation_error');
    const notObject = await t.http('POST', '/v1/host/sample/tools/session-run', { token: key, body: { arguments: 'x' } });
    expect(notObject.status).toBe(400);
  });

  it('is a 404 when seams are off', async () => {
    const off = await createTestApp({ configFile: CONFORMANCE_CONFIG });
    try {
      const k = await off.key({ scopes: CONFORMANCE_KEY_SCOPES });
      expect((await off.http('POST', '/v1/host/sample/tools/session-run', { token: k, body: {} })).status).toBe(404);
    } finally {
      await off.close();
    }
  });
});
