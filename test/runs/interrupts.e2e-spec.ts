/**
 * Interrupts: run steps suspended as approval, clarification or external event; resolution by run
 * (resume schema, quorum with named voters and majority rejection, scopes, tenant isolation), by
 * signed token (expiry, replay, forgery), a resolve racing a cancel, and a restart while waiting.
 */
import { createTestApp, TestApp } from '../support/test-app';
import { installChains, runEvents, waitForStatus } from './run-kit';

const CHAINS = {
  'vendor.test.approve': { nodes: [{ id: 'gate', typeId: 'core.approval', config: { title: 'Ship?', requiredApprovals: 1 } }, { id: 'after', typeId: 'core.noop', config: {} }], edges: [{ from: 'gate', to: 'after' }] },
  'vendor.test.host-quorum': { nodes: [{ id: 'gate', typeId: 'core.approval', config: {} }] },
  // A clerk's gate: a credential holding approvals:respond records the named panel's votes.
  'vendor.test.quorum': { nodes: [{ id: 'gate', typeId: 'core.approval', config: { title: 'Quorum', requiredApprovals: 3, rejectionPolicy: 'majority', namedVoters: { recordedBy: 'approvals:respond' } } }] },
  'vendor.test.ask': { nodes: [{ id: 'ask', typeId: 'core.clarification', config: { questions: [{ id: 'q1', question: 'Colour?' }, { id: 'n', question: 'How many?', schema: { type: 'integer', minimum: 1 } }] } }] },
  'vendor.test.event': { nodes: [{ id: 'wait', typeId: 'core.external-event', config: { eventType: 'order.status', correlation: { orderId: 'o-1', status: 'completed' } } }] },
};

describe('runs: interrupts', () => {
  let t: TestApp;
  let key: string;
  let low: string;
  let other: string;

  const start = async (workflowId: string, token = key): Promise<string> => {
    const r = await t.http('POST', '/v1/runs', { token, body: { workflowId } });
    expect(r.status).toBe(201);
    return r.body.runId as string;
  };
  const resolve = (runId: string, nodeId: string, body: unknown, token = key) => t.http('POST', `/v1/runs/${runId}/interrupts/${nodeId}`, { token, body });

  beforeAll(async () => {
    t = await createTestApp();
    key = await t.key({ scopes: ['runs:create', 'runs:read', 'runs:cancel', 'approvals:respond'] });
    low = await t.key({ scopes: ['runs:create', 'runs:read', 'runs:cancel'] });
    other = await t.key({ tenant: 'tenant-b', scopes: ['runs:create', 'runs:read', 'runs:cancel', 'approvals:respond'] });
    await installChains(t, 'default', 'vendor.test.interrupts', CHAINS);
  });

  afterAll(async () => {
    await t?.close();
  });

  it('suspends an approval in waiting-approval with its interrupt, refuses bad values, and completes on accept', async () => {
    const runId = await start('vendor.test.approve');
    const snap = await waitForStatus(t, key, runId, ['waiting-approval']);
    expect(snap.currentNodeId).toBe('gate');
    expect(snap.interrupt).toMatchObject({ kind: 'approval', nodeId: 'gate', title: 'Ship?', quorum: { requiredApprovals: 1, rejectionPolicy: 'single-veto', accepted: 0, rejected: 0 } });
    expect(snap.interrupt.resumeSchema.properties.action.enum).toEqual(['accept', 'reject']);
    expect(snap.interrupt.interruptToken).toBeUndefined(); // approvals need a bearer, never a token

    for (const [body, status, error] of [
      [{ resumeValue: { action: 'maybe' } }, 400, 'validation_error'],
      [{ resumeValue: { action: 'accept', extra: 1 } }, 400, 'validation_error'],
      [{}, 400, 'validation_error'],
      [{ resumeValue: { action: 'accept' }, more: true }, 400, 'validation_error'],
    ] as const) {
      const r = await resolve(runId, 'gate', body);
      expect([JSON.stringify(body), r.status, r.body.error]).toEqual([JSON.stringify(body), status, error]);
    }
    expect((await resolve(runId, 'no-such-node', { resumeValue: { action: 'accept' } })).status).toBe(404);
    expect((await resolve('00000000-0000-4000-8000-000000000000', 'gate', { resumeValue: { action: 'accept' } })).status).toBe(404);
    expect((await resolve('not-a-uuid', 'gate', { resumeValue: { action: 'accept' } })).status).toBe(404);
    // Scope fails closed; another tenant sees nothing (foreign == unknown == 404).
    expect((await resolve(runId, 'gate', { resumeValue: { action: 'accept' } }, low)).status).toBe(403);
    const foreign = await resolve(runId, 'gate', { resumeValue: { action: 'accept' } }, other);
    expect([foreign.status, foreign.body.error]).toEqual([404, 'not_found']);
    const listB = await t.http('GET', '/v1/approvals', { token: other });
    expect(listB.body.approvals).toEqual([]);
    expect((await waitForStatus(t, key, runId, ['waiting-approval'])).status).toBe('waiting-approval');

    const ok = await resolve(runId, 'gate', { resumeValue: { action: 'accept' } });
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ runId, nodeId: 'gate', interruptState: 'resolved' });
    const done = await waitForStatus(t, key, runId, ['completed', 'failed']);
    expect(done.status).toBe('completed');
    expect(done.interrupt).toBeUndefined();
    // Resolved: the interrupt is gone.
    expect((await resolve(runId, 'gate', { resumeValue: { action: 'accept' } })).status).toBe(404);
    const types = (await runEvents(t, key, runId)).map((e) => e.type);
    expect(types).toEqual(expect.arrayContaining(['node.suspended', 'node.resumed', 'run.completed']));
  });

  it('counts a quorum of named voters; votes before it answer 200 and the run keeps waiting', async () => {
    const runId = await start('vendor.test.quorum');
    await waitForStatus(t, key, runId, ['waiting-approval']);
    for (const voter of ['approver-1', 'approver-2']) {
      const r = await resolve(runId, 'gate', { resumeValue: { action: 'accept', voter } });
      expect([r.status, r.body.interruptState, r.body.status]).toEqual([200, 'pending', 'waiting-approval']);
    }
    // The same voter twice is refused; the quorum is of distinct voters.
    const again = await resolve(runId, 'gate', { resumeValue: { action: 'accept', voter: 'approver-2' } });
    expect([again.status, again.body.error]).toEqual([409, 'approval_already_decided']);
    const mid = await waitForStatus(t, key, runId, ['waiting-approval']);
    expect(mid.interrupt.quorum).toMatchObject({ requiredApprovals: 3, rejectionPolicy: 'majority', accepted: 2, rejected: 0 });
    expect(mid.interrupt.quorum.votes.map((v: { voter: string }) => v.voter)).toEqual(['approver-1', 'approver-2']);
    const last = await resolve(runId, 'gate', { resumeValue: { action: 'accept', voter: 'approver-3' } });
    expect([last.status, last.body.interruptState]).toEqual([200, 'resolved']);
    expect((await waitForStatus(t, key, runId, ['completed', 'failed'])).status).toBe('completed');
    const [gate] = await t.ds.query(`SELECT "resolved_by", "state" FROM "approval" WHERE "run_id" = $1`, [runId]);
    expect(gate).toEqual({ resolved_by: 'approver-3', state: 'granted' });
  });

  it('accepts a named voter only where the workflow set the quorum; the host quorum counts principals', async () => {
    const runId = await start('vendor.test.host-quorum');
    await waitForStatus(t, key, runId, ['waiting-approval']);
    const named = await resolve(runId, 'gate', { resumeValue: { action: 'accept', voter: 'someone-else' } });
    expect([named.status, named.body.error]).toEqual([403, 'forbidden']);
    expect((await waitForStatus(t, key, runId, ['waiting-approval'])).interrupt.quorum.votes).toEqual([]);
    const own = await resolve(runId, 'gate', { resumeValue: { action: 'accept' } });
    expect(own.status).toBe(200);
    expect((await waitForStatus(t, key, runId, ['completed', 'failed'])).status).toBe('completed');
  });

  it('fails the run when a majority of the quorum rejects; one reject is only a vote', async () => {
    const runId = await start('vendor.test.quorum');
    await waitForStatus(t, key, runId, ['waiting-approval']);
    const first = await resolve(runId, 'gate', { resumeValue: { action: 'reject', voter: 'approver-1' } });
    expect([first.status, first.body.interruptState, first.body.status]).toEqual([200, 'pending', 'waiting-approval']);
    const second = await resolve(runId, 'gate', { resumeValue: { action: 'reject', voter: 'approver-2', feedback: 'no' } });
    expect([second.status, second.body.interruptState]).toEqual([200, 'rejected']);
    const done = await waitForStatus(t, key, runId, ['completed', 'failed']);
    expect([done.status, done.error.code]).toEqual(['failed', 'approval_denied']);
  });

  it('asks a clarification in waiting-input and outputs the answers checked against each question', async () => {
    const runId = await start('vendor.test.ask');
    const snap = await waitForStatus(t, key, runId, ['waiting-input']);
    expect(snap.currentNodeId).toBe('ask');
    expect(snap.interrupt).toMatchObject({ kind: 'clarification', nodeId: 'ask', data: { questions: [{ id: 'q1' }, { id: 'n' }] } });
    expect((await resolve(runId, 'ask', { resumeValue: { answers: { q1: 'blue' } } })).status).toBe(400); // n missing
    expect((await resolve(runId, 'ask', { resumeValue: { answers: { q1: 'blue', n: 0 } } })).status).toBe(400);
    // The approvals route cannot grant a value-resolved interrupt without its value.
    const gateId = snap.interrupt.interruptId as string;
    const grant = await t.http('POST', `/v1/approvals/${gateId}/grant`, { token: key, body: {} });
    expect([grant.status, grant.body.error]).toEqual([422, 'resume_value_required']);
    const item = await t.http('GET', `/v1/approvals/${gateId}`, { token: key });
    expect(item.body).toMatchObject({ kind: 'clarification', state: 'pending', runId, nodeId: 'ask' });
    // Resolved through the approvals store (the CLI's and the console's route).
    const ok = await t.http('POST', `/v1/approvals/${gateId}/resolve`, { token: key, body: { resumeValue: { answers: { q1: 'blue', n: 2 } } } });
    expect([ok.status, ok.body.interruptState]).toEqual([200, 'resolved']);
    const done = await waitForStatus(t, key, runId, ['completed', 'failed']);
    expect(done.status).toBe('completed');
    expect(done.outputs).toEqual({ ask: { answers: { q1: 'blue', n: 2 } } });
  });

  it('resolves an external event once by its signed token; mismatch, forgery and replay are refused', async () => {
    const runId = await start('vendor.test.event');
    const snap = await waitForStatus(t, key, runId, ['waiting-external']);
    const token = snap.interrupt.interruptToken as string;
    expect(token).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    expect(snap.interrupt.callbackUrl).toBe(`/v1/interrupts/${token}`);
    // The token is stable across reads (derived, not re-minted).
    expect((await waitForStatus(t, key, runId, ['waiting-external'])).interrupt.interruptToken).toBe(token);

    const inspect = await t.http('GET', `/v1/interrupts/${token}`);
    expect(inspect.status).toBe(200);
    expect(inspect.body).toMatchObject({ kind: 'external-event', data: { eventType: 'order.status', correlation: { orderId: 'o-1', status: 'completed' } } });

    const [body, sig] = token.split('.');
    const forged = `${Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(body, 'base64url').toString()), expiresAt: '2999-01-01T00:00:00.000Z' })).toString('base64url')}.${sig}`;
    for (const bad of [forged, `${body}.${Buffer.alloc(32).toString('base64url')}`, 'tok_abc', `${body}`]) {
      expect((await t.http('GET', `/v1/interrupts/${bad}`)).status).toBe(404);
      expect((await t.http('POST', `/v1/interrupts/${bad}`, { body: { resumeValue: {} } })).status).toBe(404);
    }
    expect((await t.http('GET', `/v1/interrupts/${encodeURIComponent('!!!x!!!')}`)).status).toBe(400);

    const mismatch = await t.http('POST', `/v1/interrupts/${token}`, { body: { resumeValue: { orderId: 'o-2', status: 'completed' } } });
    expect([mismatch.status, mismatch.body.error]).toEqual([422, 'correlation_mismatch']);
    expect((await t.http('POST', `/v1/interrupts/${token}`, { body: { resumeValue: { orderId: 'o-1' } } })).status).toBe(400);
    expect((await t.http('POST', `/v1/interrupts/${token}`, { body: { nope: 1 } })).status).toBe(400);
    expect((await waitForStatus(t, key, runId, ['waiting-external'])).status).toBe('waiting-external');

    const event = { orderId: 'o-1', status: 'completed', ref: 'r-9' };
    const ok = await t.http('POST', `/v1/interrupts/${token}`, { body: { resumeValue: event } });
    expect([ok.status, ok.body.interruptState]).toEqual([200, 'resolved']);
    const replay = await t.http('POST', `/v1/interrupts/${token}`, { body: { resumeValue: event } });
    expect([replay.status, replay.body.error]).toEqual([409, 'interrupt_already_resolved']);
    const done = await waitForStatus(t, key, runId, ['completed', 'failed']);
    expect([done.status, done.outputs]).toEqual(['completed', { wait: { event } }]);
    const [gate] = await t.ds.query(`SELECT "resolved_by" FROM "approval" WHERE "run_id" = $1`, [runId]);
    expect(gate.resolved_by).toMatch(/^token:/);
    // The signing secret is never written to the log.
    const [{ value }] = await t.ds.query(`SELECT "value" FROM "host_secret" WHERE "name" = 'interrupt-token'`);
    const secret = Buffer.from(value).toString('base64');
    expect(t.logs.some((l) => l.includes(secret) || l.includes(token))).toBe(false);
  });

  it('ends a resolve racing a cancel in exactly one terminal state', async () => {
    for (let i = 0; i < 6; i++) {
      const runId = await start('vendor.test.approve');
      await waitForStatus(t, key, runId, ['waiting-approval']);
      const [cancel, decide] = await Promise.all([
        t.http('POST', `/v1/runs/${runId}/cancel`, { token: key, body: { reason: 'race' } }),
        t.http('POST', `/v1/runs/${runId}/approvals/gate`, { token: key, body: { action: 'accept' } }),
      ]);
      expect(cancel.status).toBe(200);
      expect([200, 404, 409]).toContain(decide.status);
      const done = await waitForStatus(t, key, runId, ['completed', 'cancelled', 'failed']);
      if (decide.status !== 200) expect(done.status).toBe('cancelled');
      const types = (await runEvents(t, key, runId)).map((e) => e.type);
      expect(types.filter((x) => ['run.completed', 'run.cancelled', 'run.failed'].includes(x))).toHaveLength(1);
      const [gate] = await t.ds.query(`SELECT "state" FROM "approval" WHERE "run_id" = $1`, [runId]);
      expect(gate.state).toBe(decide.status === 200 ? 'granted' : 'cancelled');
    }
  });

  it('answers a cancel of a finished run 200 (idempotent)', async () => {
    const runId = await start('vendor.test.approve');
    await waitForStatus(t, key, runId, ['waiting-approval']);
    expect((await t.http('POST', `/v1/runs/${runId}/cancel`, { token: key, body: {} })).status).toBe(200);
    const again = await t.http('POST', `/v1/runs/${runId}/cancel`, { token: key, body: {} });
    expect([again.status, again.body.status]).toEqual([200, 'cancelled']);
    // The cancelled run's interrupt is closed: resolving it is 404.
    expect((await resolve(runId, 'gate', { resumeValue: { action: 'accept' } })).status).toBe(404);
  });

  it('keeps a suspension across a restart: another host process resolves it and runs the rest', async () => {
    const second = await createTestApp({ database: t.databaseName });
    let closed = false;
    try {
      const k2 = await second.key({ scopes: ['runs:create', 'runs:read', 'approvals:respond'] });
      const r = await second.http('POST', '/v1/runs', { token: k2, body: { workflowId: 'vendor.test.ask' } });
      const runId = r.body.runId as string;
      await waitForStatus(second, k2, runId, ['waiting-input']);
      await second.close();
      closed = true;
      // The first process never executed the run: it finds the suspension in the database.
      const ok = await resolve(runId, 'ask', { resumeValue: { answers: { q1: 'red', n: 1 } } });
      expect(ok.status).toBe(200);
      const done = await waitForStatus(t, key, runId, ['completed', 'failed']);
      expect([done.status, done.outputs]).toEqual(['completed', { ask: { answers: { q1: 'red', n: 1 } } }]);
    } finally {
      if (!closed) await second.close();
    }
  });

  it('refuses an expired token 410 interrupt_expired', async () => {
    const short = await createTestApp({ database: t.databaseName, configFile: { runs: { interrupts: { tokenTtlMs: 1000 } } } });
    try {
      const k2 = await short.key({ scopes: ['runs:create', 'runs:read'] });
      const runId = (await short.http('POST', '/v1/runs', { token: k2, body: { workflowId: 'vendor.test.event' } })).body.runId as string;
      const snap = await waitForStatus(short, k2, runId, ['waiting-external']);
      const token = snap.interrupt.interruptToken as string;
      expect(Date.parse(snap.interrupt.tokenExpiresAt) - Date.parse(snap.interrupt.requestedAt)).toBe(1000);
      await new Promise((res) => setTimeout(res, Math.max(0, Date.parse(snap.interrupt.tokenExpiresAt) - Date.now()) + 100));
      const late = await short.http('POST', `/v1/interrupts/${token}`, { body: { resumeValue: { orderId: 'o-1', status: 'completed' } } });
      expect([late.status, late.body.error]).toEqual([410, 'interrupt_expired']);
      expect((await short.http('GET', `/v1/interrupts/${token}`)).status).toBe(410);
      expect((await waitForStatus(short, k2, runId, ['waiting-external'])).status).toBe('waiting-external');
    } finally {
      await short.close();
    }
  });
});
