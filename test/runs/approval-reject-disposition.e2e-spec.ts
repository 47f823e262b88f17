/**
 * RFC 0223 (interrupt.md §Rejection) under majors 1 and 2 (one host serving both): a rejected approval
 * gate is a failed source. Routed over an `any_failed` edge the run goes on and completes, its
 * `all_success` sibling is skipped; unrouted, the run fails naming the gate. A gate's own `timeoutMs`
 * is resolved rejected by the host on time (`reason: "timeout"`), whatever `onTimeout` says. Major 2
 * reads `interrupt.resolved {action, decision}`; major 1's payloads keep their recorded keys only. A gate looped back
 * to itself over a reject is asked again: a new interrupt under a new key, announced on the run's own log.
 */
import { createTestApp, TestApp } from '../support/test-app';
import { perMajor, waitForStatus } from './run-kit';

type Ev = { type: string; nodeId?: string; sequence: number; payload: Record<string, any> }; // eslint-disable-line @typescript-eslint/no-explicit-any

describe('approval reject disposition (RFC 0223) under majors 1 and 2', () => {
  let t: TestApp;
  let key: string;
  const TENANT = 'default';
  const V2 = { 'openwop-version': '2.0' };

  const { at, idAt, bare } = perMajor(() => t, () => key, TENANT);
  const create = async (major: 1 | 2, workflowId: string): Promise<string> => {
    const r = await at(major, 'POST', '/runs', { workflowId });
    expect([workflowId, r.status]).toEqual([workflowId, 201]);
    return bare(r.body.runId as string);
  };
  const events = async (major: 1 | 2, runId: string): Promise<Ev[]> => (await at(major, 'GET', `/runs/${idAt(major, runId)}/events/poll?timeout=0`)).body.events as Ev[];
  const reject = async (major: 1 | 2, runId: string, extra: Record<string, unknown> = {}) => {
    const r = await at(major, 'POST', `/runs/${idAt(major, runId)}/interrupts/gate`, { resumeValue: { action: 'reject', ...extra } });
    expect(r.status).toBe(200);
    return r;
  };
  const ran = (evs: Ev[], nodeId: string, type: string) => evs.some((e) => e.type === type && e.payload.nodeId === nodeId);

  beforeAll(async () => {
    t = await createTestApp({ env: { OPENWOP_TEST_SEAMS: 'true', OPENWOP_PROTOCOL_MAJORS: '1,2' } });
    key = await t.key({ scopes: ['runs:create', 'runs:read', 'runs:cancel', 'approvals:respond'] });
  });
  afterAll(() => t?.close());

  it('advertises the routed and timeout fixtures', async () => {
    const fixtures = (await t.http('GET', '/.well-known/openwop', { headers: V2 })).body.fixtures as string[];
    expect(fixtures).toEqual(expect.arrayContaining(['conformance-approval-reject-routed', 'conformance-approval-timeout', 'conformance-approval-timeout-approve', 'conformance-approval-reject-loopback']));
  });

  it.each([1, 2] as const)('major %i: a reject routed over an any_failed edge fails the gate, runs on-reject, skips on-accept, and completes the run', async (major) => {
    const runId = await create(major, 'conformance-approval-reject-routed');
    await waitForStatus(t, key, runId, ['waiting-approval']);
    await reject(major, runId);
    const done = await waitForStatus(t, key, runId, ['completed', 'failed']);
    expect(done.status).toBe('completed');
    const evs = await events(major, runId);
    const gateFailed = evs.find((e) => e.type === 'node.failed' && e.payload.nodeId === 'gate');
    expect(gateFailed?.payload.error).toEqual(major === 1 ? expect.objectContaining({ code: 'approval_denied' }) : expect.objectContaining({ code: 'approval_rejected', retryable: false }));
    expect(ran(evs, 'on-reject', 'node.completed')).toBe(true);
    expect(ran(evs, 'on-accept', 'node.started')).toBe(false);
    expect(evs.find((e) => e.type === 'node.skipped' && e.payload.nodeId === 'on-accept')?.payload.reason).toBe('trigger-rule-unsatisfied');
    expect(evs.some((e) => e.type === 'run.failed')).toBe(false);
    // The run's outputs are its sinks that completed.
    expect(evs.find((e) => e.type === 'run.completed')?.payload.outputs).toEqual({ 'on-reject': {} });
  });

  it('an accept takes the all_success edge: on-accept runs, on-reject is skipped', async () => {
    const runId = await create(1, 'conformance-approval-reject-routed');
    await waitForStatus(t, key, runId, ['waiting-approval']);
    expect((await at(1, 'POST', `/runs/${runId}/interrupts/gate`, { resumeValue: { action: 'accept' } })).status).toBe(200);
    expect((await waitForStatus(t, key, runId, ['completed', 'failed'])).status).toBe('completed');
    const evs = await events(1, runId);
    expect(ran(evs, 'on-accept', 'node.completed')).toBe(true);
    expect(ran(evs, 'on-reject', 'node.started')).toBe(false);
    expect(evs.filter((e) => e.type === 'node.skipped').map((e) => e.payload.nodeId)).toEqual(['on-reject']);
  });

  it.each([1, 2] as const)('major %i: an unrouted reject records the reject; major 2 adds action and decision, major 1 keeps its keys', async (major) => {
    const runId = await create(major, 'conformance-approval');
    await waitForStatus(t, key, runId, ['waiting-approval']);
    await reject(major, runId);
    expect((await waitForStatus(t, key, runId, ['failed', 'completed'])).status).toBe('failed');
    const resolved = (await events(major, runId)).find((e) => e.type === 'interrupt.resolved')!;
    if (major === 2) expect(resolved.payload).toMatchObject({ action: 'reject', decision: 'rejected' });
    else expect(Object.keys(resolved.payload).sort()).toEqual(['interruptId', 'kind', 'nodeId', 'resolvedAt', 'resolvedBy', 'resumeValue', 'runId']);
    const runFailed = (await events(major, runId)).find((e) => e.type === 'run.failed')!;
    expect(runFailed.payload.failedNodeId).toBe('gate');
  });

  it('an accept reads action accept and decision granted at major 2', async () => {
    const runId = await create(2, 'conformance-approval');
    await waitForStatus(t, key, runId, ['waiting-approval']);
    expect((await at(2, 'POST', `/runs/${idAt(2, runId)}/interrupts/gate`, { resumeValue: { action: 'accept' } })).status).toBe(200);
    await waitForStatus(t, key, runId, ['completed']);
    expect((await events(2, runId)).find((e) => e.type === 'interrupt.resolved')?.payload).toMatchObject({ action: 'accept', decision: 'granted' });
  });

  it.each([
    [1, 'conformance-approval-timeout'],
    [2, 'conformance-approval-timeout'],
    [2, 'conformance-approval-timeout-approve'],
  ] as const)('major %i, %s: left unresolved past its timeoutMs, the gate is resolved rejected by the host and fails the run', async (major, fixture) => {
    const runId = await create(major, fixture);
    await waitForStatus(t, key, runId, ['waiting-approval']);
    const started = Date.now();
    // The host's approval sweep runs every 30 s: only the gate's own timer closes it this soon.
    const done = await waitForStatus(t, key, runId, ['failed', 'completed'], 10_000);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(done.status).toBe('failed');
    const evs = await events(major, runId);
    const resolved = evs.filter((e) => e.type === 'interrupt.resolved');
    expect(resolved).toHaveLength(1);
    expect(resolved[0].payload).toMatchObject(major === 2 ? { action: 'timeout', decision: 'rejected', reason: 'timeout', nodeId: 'gate' } : { reason: 'timeout', resumeValue: { action: 'reject' }, nodeId: 'gate' });
    if (major === 1) expect(resolved[0].payload.action).toBeUndefined();
    expect(evs.find((e) => e.type === 'node.failed')?.payload.error.code).toBe(major === 1 ? 'approval_denied' : 'approval_rejected');
    expect(evs.find((e) => e.type === 'run.failed')?.payload).toMatchObject({ failedNodeId: 'gate', error: expect.objectContaining({ code: major === 1 ? 'approval_denied' : 'approval_rejected' }) });
    // Closed: a late resolve finds nothing to decide.
    expect((await at(major, 'POST', `/runs/${idAt(major, runId)}/interrupts/gate`, { resumeValue: { action: 'accept' } })).status).toBeGreaterThanOrEqual(400);
  });

  it.each([1, 2] as const)('major %i: a gate looped back to itself through revise is asked again under a new key, twice, and an accept ends the loop', async (major) => {
    const runId = await create(major, 'conformance-approval-reject-loopback');
    const requests = async () => (await events(major, runId)).filter((e) => e.type === 'interrupt.requested' && e.nodeId === 'gate');
    const waitRequests = async (n: number) => {
      for (let i = 0; i < 200 && (await requests()).length < n; i++) await new Promise((r) => setTimeout(r, 50));
      await waitForStatus(t, key, runId, ['waiting-approval']);
      return requests();
    };
    await waitRequests(1);
    await reject(major, runId);
    // Twice round the loop: revise (completed once) runs again on the second reject.
    await waitRequests(2);
    await reject(major, runId);
    const asked = await waitRequests(3);
    expect(new Set(asked.map((e) => e.payload.key)).size).toBe(3);
    let evs = await events(major, runId);
    // A new interrupt each visit (node.suspended names it); the log's interrupt.requested is the InterruptPayload exactly.
    expect(new Set(evs.filter((e) => e.type === 'node.suspended').map((e) => e.payload.interruptId)).size).toBe(3);
    expect(Object.keys(asked[0].payload).sort()).toEqual(['data', 'key', 'kind', 'resumeSchema', 'timeoutMs']);
    // Only the caller's two resolves: the first rejection is not replayed as the second visit's answer.
    expect(evs.filter((e) => e.type === 'interrupt.resolved')).toHaveLength(2);
    expect(evs.filter((e) => e.type === 'node.completed' && e.payload.nodeId === 'revise')).toHaveLength(2);
    expect(evs.filter((e) => e.type === 'node.failed' && e.payload.nodeId === 'gate')).toHaveLength(2);
    expect((await at(major, 'POST', `/runs/${idAt(major, runId)}/interrupts/gate`, { resumeValue: { action: 'accept' } })).status).toBe(200);
    expect((await waitForStatus(t, key, runId, ['completed', 'failed'])).status).toBe('completed');
    evs = await events(major, runId);
    expect(evs.filter((e) => e.type === 'node.completed' && e.payload.nodeId === 'gate')).toHaveLength(1);
    expect(evs.filter((e) => e.type === 'node.started' && e.payload.nodeId === 'revise')).toHaveLength(2);
  });

  it('refuses a cycle that no failure-admitting edge breaks', async () => {
    const { parseDefinition } = await import('../../src/capabilities/runs/workflow-definition');
    const nodes = [{ id: 'a', typeId: 'core.noop' }, { id: 'b', typeId: 'core.noop' }];
    expect(parseDefinition('w', { nodes, edges: [{ from: 'a', to: 'b', triggerRule: 'any_success' }, { from: 'b', to: 'a', triggerRule: 'any_success' }] }).problems[0].message).toMatch(/cycle/);
    expect(parseDefinition('w', { nodes, edges: [{ from: 'a', to: 'b', triggerRule: 'any_failed' }, { from: 'b', to: 'a', triggerRule: 'any_success' }] }).problems).toEqual([]);
    expect(parseDefinition('w', { nodes, edges: [{ from: 'a', to: 'b', triggerRule: 'sometimes' }] }).problems[0]).toEqual({ path: '/dag/edges/0/triggerRule', message: expect.stringMatching(/any_failed/) });
  });

  it.each([1, 2] as const)('major %i: a majority reject decides the quorum gate on the second reject of three', async (major) => {
    const runId = await create(major, 'conformance-interrupt-quorum');
    await waitForStatus(t, key, runId, ['waiting-approval']);
    expect((await reject(major, runId, { voter: 'approver-1' })).body.interruptState).toBe('pending');
    expect((await events(major, runId)).some((e) => e.type === 'interrupt.resolved')).toBe(false);
    await reject(major, runId, { voter: 'approver-2' });
    const done = await waitForStatus(t, key, runId, ['failed', 'completed']);
    expect(done.status).toBe('failed');
    const resolved = (await events(major, runId)).filter((e) => e.type === 'interrupt.resolved');
    expect(resolved).toHaveLength(1);
    if (major === 2) expect(resolved[0].payload).toMatchObject({ action: 'reject', decision: 'rejected' });
    expect((await at(major, 'GET', `/runs/${idAt(major, runId)}`)).body.error.code).toBe(major === 1 ? 'approval_denied' : 'approval_rejected');
  });
});
