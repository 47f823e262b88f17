/**
 * Loop-backs (docs/runs.md, Loops): a cycle over any_success edges re-enters its node once per loop, bounded by the
 * workflow's settings.maxLoopbackIterations (workflow.loopback-limit, then run.failed loop_limit_exceeded); each
 * execution of a looped side-effecting node is its own effect (its own invocation-log entry), and a replay fork
 * resolves each from the source's execution of the same ordinal, failing closed where the source recorded none
 * (replay.md §Suppression rules 2 and 3). Driven with the conformance fixture conformance-replay-ordinal-loop.
 */
import { SchemaRegistry } from '../../src/platform/schemas/schema-registry';
import { createTestApp, TestApp } from '../support/test-app';
import { expectSchemaValid, runEvents, TestEvent, waitForStatus } from './run-kit';

const FIXTURE = 'conformance-replay-ordinal-loop';
const of = (events: TestEvent[], nodeId: string, type: string) => events.filter((e) => e.nodeId === nodeId && e.type === type);

describe('runs: loop-backs and execution ordinals', () => {
  let t: TestApp;
  let key: string;
  let stranger: string;

  beforeAll(async () => {
    t = await createTestApp({ env: { OPENWOP_TEST_SEAMS: 'true' } });
    key = await t.key({ scopes: ['runs:create', 'runs:read', 'runs:cancel'] });
    stranger = await t.key({ tenant: 'stranger', scopes: ['runs:create', 'runs:read'] });
  });

  afterAll(async () => {
    await t?.close();
  });

  const start = async (delayMs: number) => {
    const r = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: FIXTURE, inputs: { delayMs } } });
    expect(r.status).toBe(201);
    return r.body.runId as string;
  };
  const effects = async (runId: string, token = key) => t.http('GET', `/v1/runs/${runId}/effects`, { token });
  const forkAt = async (runId: string, fromSeq: number) => {
    const f = await t.http('POST', `/v1/runs/${runId}:fork`, { token: key, body: { mode: 'replay', fromSeq } });
    expect(f.status).toBe(201);
    return f.body.runId as string;
  };

  it('is advertised as a fixture, and the loop runs maxLoopbackIterations times, then fails loop_limit_exceeded', async () => {
    expect((await t.http('GET', '/.well-known/openwop')).body.fixtures).toContain(FIXTURE);
    const runId = await start(0);
    const done = await waitForStatus(t, key, runId, ['completed', 'failed']);
    expect([done.status, done.error?.code]).toEqual(['failed', 'loop_limit_exceeded']);
    const events = await runEvents(t, key, runId);
    // run-kit checks the run events it knows; the loop-back bound's against its run-event-payloads $def here.
    expectSchemaValid(events.filter((e) => e.type !== 'workflow.loopback-limit'));
    const def = { $ref: 'https://openwop.dev/spec/v1/run-event-payloads.schema.json#/$defs/workflowLoopbackLimit' };
    for (const e of events.filter((x) => x.type === 'workflow.loopback-limit')) expect(SchemaRegistry.shared().validateWith(def, e.payload)).toEqual([]);
    expect(events.filter((e) => e.type === 'node.started').map((e) => e.nodeId)).toEqual(['start', 'effect', 'wait', 'effect', 'wait']);
    const limit = events.filter((e) => e.type === 'workflow.loopback-limit');
    expect(limit.map((e) => [e.nodeId, e.payload])).toEqual([['effect', { nodeId: 'effect', iterations: 2, limit: 2 }]]);
    expect(events.findIndex((e) => e.type === 'workflow.loopback-limit')).toBe(events.findIndex((e) => e.type === 'run.failed') - 1);
    // The hold's outputs are its resolved inputs, exactly.
    expect(of(events, 'wait', 'node.completed').map((e) => e.payload.outputs)).toEqual([{ delayMs: 0 }, { delayMs: 0 }]);
    // Two executions, two effects: distinct identities, each in the invocation log once.
    const ids = of(events, 'effect', 'node.completed').map((e) => (e.payload.outputs as { effectId: string }).effectId);
    expect(new Set(ids).size).toBe(2);
    const ledger = await effects(runId);
    expect(ledger.status).toBe(200);
    expect(ledger.body.effects.map((e: { effectId: string; nodeId: string }) => [e.nodeId, e.effectId]).sort()).toEqual(ids.map((id) => ['effect', id]).sort());
    // Another tenant sees neither the run nor its effects.
    expect((await effects(runId, stranger)).status).toBe(404);
  });

  it('a replay fork resolves each looped execution from the source execution of the same ordinal, and performs none', async () => {
    const runId = await start(0);
    await waitForStatus(t, key, runId, ['failed']);
    const source = await runEvents(t, key, runId);
    const fork = await forkAt(runId, of(source, 'effect', 'node.started')[0].sequence);
    const done = await waitForStatus(t, key, fork, ['completed', 'failed']);
    // Both executions were recorded: each replays its own outcome, and the loop ends at its bound as the source did.
    expect(done.error?.code).toBe('loop_limit_exceeded');
    const forked = await runEvents(t, key, fork);
    expect(of(forked, 'effect', 'node.completed').map((e) => e.payload.outputs)).toEqual(of(source, 'effect', 'node.completed').map((e) => e.payload.outputs));
    expect((await effects(fork)).body.effects).toEqual([]);
  });

  it('an execution the source never finished fails closed with replay_source_missing in the fork', async () => {
    const runId = await start(3000);
    for (let i = 0; i < 200 && !of(await runEvents(t, key, runId), 'effect', 'node.completed').length; i++) await new Promise((r) => setTimeout(r, 50));
    expect((await t.http('POST', `/v1/runs/${runId}/cancel`, { token: key, body: {} })).status).toBe(200);
    await waitForStatus(t, key, runId, ['cancelled']);
    const source = await runEvents(t, key, runId);
    expect([of(source, 'effect', 'node.started').length, of(source, 'effect', 'node.completed').length]).toEqual([1, 1]);
    const fork = await forkAt(runId, of(source, 'effect', 'node.started')[0].sequence);
    const done = await waitForStatus(t, key, fork, ['failed'], 20_000);
    expect(done.error?.code).toBe('replay_source_missing');
    const forked = await runEvents(t, key, fork);
    // Execution 1 replays the source's outcome; the hold ran again live; execution 2 has none and fails closed.
    expect(of(forked, 'effect', 'node.completed').map((e) => e.payload.outputs)).toEqual(of(source, 'effect', 'node.completed').map((e) => e.payload.outputs));
    expect(of(forked, 'wait', 'node.completed')).toHaveLength(1);
    expect(of(forked, 'effect', 'node.failed').map((e) => (e.payload.error as { code: string }).code)).toEqual(['replay_source_missing']);
    expect((await effects(fork)).body.effects).toEqual([]);
  }, 30_000);
});
