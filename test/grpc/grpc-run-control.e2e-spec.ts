/**
 * The gRPC twins of the run-control, workflow, interrupt, artifact and webhook routes
 * (grpc-transport.md: methods 1:1 with the REST operationIds). For each method: the answer is the
 * REST body of the same call once the message is read back as JSON; a credential without the
 * route's scopes (the webhook routes' any-of rule included) is PERMISSION_DENIED with the REST 403
 * envelope; an unknown or another tenant's id is NOT_FOUND with the REST 404 envelope; and what
 * the REST DTOs refuse is INVALID_ARGUMENT with the REST 400 envelope.
 */
import { randomBytes } from 'node:crypto';
import * as grpc from '@grpc/grpc-js';
import { WebhooksService } from '../../src/capabilities/webhooks/webhooks.service';
import { installChains, noopChain, runEvents, waitForStatus } from '../runs/run-kit';
import { createGrpcTestApp, GrpcTestApp, metadata, UnaryResult } from './grpc-kit';

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

const FULL_SCOPES = ['runs:create', 'runs:read', 'runs:cancel', 'manifest:read', 'artifacts:read', 'approvals:respond', 'webhooks:manage', 'webhooks:read'];
const UNKNOWN_RUN = '00000000-0000-4000-8000-000000000000';
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

const CHAINS = {
  'vendor.test.grpcctl.chain': noopChain(2),
  'vendor.test.grpcctl.artifact': { nodes: [{ id: 'report', typeId: 'core.artifact', config: { name: 'report.txt', content: 'hello over two transports' } }] },
  'vendor.test.grpcctl.slow': { nodes: [{ id: 'wait', typeId: 'core.delay', config: { ms: 60_000 } }], edges: [] },
  'vendor.test.grpcctl.quorum': { nodes: [{ id: 'gate', typeId: 'core.approval', config: { title: 'Quorum', requiredApprovals: 3, rejectionPolicy: 'majority', namedVoters: { recordedBy: 'approvals:respond' } } }] },
  'vendor.test.grpcctl.event': { nodes: [{ id: 'wait', typeId: 'core.external-event', config: { eventType: 'order.status', correlation: { orderId: 'o-1' } } }] },
};

function answered(r: UnaryResult): Json {
  if (!r.ok) throw new Error(`expected an answer, got ${grpc.status[r.error.code]} ${JSON.stringify(r.error.envelope)}`);
  return r.body;
}

function refused(r: UnaryResult) {
  if (r.ok) throw new Error(`expected a refusal, got ${JSON.stringify(r.body)}`);
  return r.error;
}

interface RestCall {
  method: string;
  url: string;
  token?: string;
  body?: unknown;
  headers?: Record<string, string>;
}

describe('gRPC transport: run control, workflows, interrupts, artifacts and webhooks', () => {
  let g: GrpcTestApp;
  let full: string;
  let reader: string;
  let other: string;
  let completedRun: string;
  let foreignRun: string;

  const rest = (c: RestCall) => g.t.http(c.method, c.url, { token: c.token, body: c.body, headers: c.headers });
  const call = (method: string, body: Json, token?: string, extra: Record<string, string | string[]> = {}) => g.engine.call(method, body, metadata(token, extra));
  const start = async (workflowId: string, token = full): Promise<string> => {
    const r = await g.t.http('POST', '/v1/runs', { token, body: { workflowId } });
    expect(r.status).toBe(201);
    return r.body.runId as string;
  };

  /** The REST refusal and the gRPC one for the same request: the REST status, the gRPC code, and one envelope. */
  async function sameRefusal(method: string, grpcBody: Json, token: string | undefined, restCall: RestCall, code: grpc.status, httpStatus: number, extra: Record<string, string> = {}) {
    const viaRest = await rest({ token, ...restCall, headers: { ...extra, ...restCall.headers } });
    const e = refused(await call(method, grpcBody, token, extra));
    expect({ method, status: viaRest.status, code: grpc.status[e.code], envelope: e.envelope }).toEqual({ method, status: httpStatus, code: grpc.status[code], envelope: viaRest.body });
    expect(e.message).toBe(viaRest.body.message);
    return e.envelope!;
  }

  beforeAll(async () => {
    // Neither host serves its OpenAPI document here: skipping it halves the boot.
    g = await createGrpcTestApp({ openApi: false, env: { OPENWOP_CREDENTIAL_KEYS: `k1:${randomBytes(32).toString('base64')}` } });
    // Webhook URLs resolve from this table, so no test depends on the network's DNS.
    g.t.app.get(WebhooksService).resolver = async (host: string) => {
      if (host !== 'hooks.example') throw Object.assign(new Error(`no such host ${host}`), { code: 'ENOTFOUND' });
      return [{ address: '93.184.216.34', family: 4 }];
    };
    full = await g.t.key({ scopes: FULL_SCOPES });
    reader = await g.t.key({ scopes: ['runs:read'] });
    other = await g.t.key({ tenant: 'other', scopes: FULL_SCOPES });
    await installChains(g.t, 'default', 'vendor.test.grpcctl', CHAINS);
    await installChains(g.t, 'other', 'vendor.test.grpcctl-other', { 'vendor.test.grpcctl.theirs': noopChain(1), 'vendor.test.grpcctl.slow': CHAINS['vendor.test.grpcctl.slow'] });
    completedRun = await start('vendor.test.grpcctl.chain');
    await waitForStatus(g.t, full, completedRun, ['completed']);
    foreignRun = await start('vendor.test.grpcctl.slow', other);
  });

  afterAll(async () => {
    if (g && foreignRun) await g.t.http('POST', `/v1/runs/${foreignRun}/cancel`, { token: other, body: {} });
    await g?.close();
  });

  describe('GetWorkflow', () => {
    it('answers the REST WorkflowDefinition', async () => {
      const viaRest = await rest({ method: 'GET', url: '/v1/workflows/vendor.test.grpcctl.chain', token: full });
      expect(viaRest.status).toBe(200);
      expect(viaRest.body.nodes.map((n: Json) => n.id)).toEqual(['n1', 'n2']);
      expect(answered(await call('GetWorkflow', { workflowId: 'vendor.test.grpcctl.chain' }, full))).toEqual(viaRest.body);
    });

    it('PERMISSION_DENIED without manifest:read or runs:create; NOT_FOUND for an unknown and another tenant\'s workflow', async () => {
      const denied = await sameRefusal('GetWorkflow', { workflowId: 'vendor.test.grpcctl.chain' }, reader, { method: 'GET', url: '/v1/workflows/vendor.test.grpcctl.chain' }, grpc.status.PERMISSION_DENIED, 403);
      expect(denied.details).toEqual({ requiredScopes: [], requiredAnyOfScopes: ['manifest:read', 'runs:create'] });
      await sameRefusal('GetWorkflow', { workflowId: 'vendor.test.grpcctl.missing' }, full, { method: 'GET', url: '/v1/workflows/vendor.test.grpcctl.missing' }, grpc.status.NOT_FOUND, 404);
      await sameRefusal('GetWorkflow', { workflowId: 'vendor.test.grpcctl.theirs' }, full, { method: 'GET', url: '/v1/workflows/vendor.test.grpcctl.theirs' }, grpc.status.NOT_FOUND, 404);
      // The owner reads it, over both transports.
      expect(answered(await call('GetWorkflow', { workflowId: 'vendor.test.grpcctl.theirs' }, other)).id).toBe('vendor.test.grpcctl.theirs');
    });
  });

  describe('ForkRun', () => {
    it('forks like REST: the same key over both transports is one fork; the new run completes', async () => {
      const key = `grpc-fork-${completedRun}`;
      const forked = answered(await call('ForkRun', { runId: completedRun, fromSeq: 0, mode: 'replay' }, full, { 'idempotency-key': key }));
      expect(forked).toMatchObject({ sourceRunId: completedRun, mode: 'replay', eventsUrl: `/v1/runs/${forked.runId}/events`, statusUrl: `/v1/runs/${forked.runId}` });
      expect(forked.runId).not.toBe(completedRun);
      // The same key over REST answers the same fork (absolute URLs there: REST knows its origin).
      const viaRest = await rest({ method: 'POST', url: `/v1/runs/${completedRun}:fork`, token: full, body: { fromSeq: 0, mode: 'replay' }, headers: { 'idempotency-key': key } });
      expect(viaRest.status).toBe(201);
      expect(viaRest.body.runId).toBe(forked.runId);
      expect(viaRest.headers['openwop-idempotent-replay']).toBe('true');
      expect((await waitForStatus(g.t, full, forked.runId, ['completed', 'failed'])).status).toBe('completed');
    });

    it('PERMISSION_DENIED without runs:create; NOT_FOUND for unknown and foreign runs; INVALID_ARGUMENT and 422 as REST answers them', async () => {
      await sameRefusal('ForkRun', { runId: completedRun, fromSeq: 0, mode: 'replay' }, reader, { method: 'POST', url: `/v1/runs/${completedRun}:fork`, body: { fromSeq: 0, mode: 'replay' } }, grpc.status.PERMISSION_DENIED, 403);
      await sameRefusal('ForkRun', { runId: UNKNOWN_RUN, fromSeq: 0, mode: 'replay' }, full, { method: 'POST', url: `/v1/runs/${UNKNOWN_RUN}:fork`, body: { fromSeq: 0, mode: 'replay' } }, grpc.status.NOT_FOUND, 404);
      await sameRefusal('ForkRun', { runId: foreignRun, fromSeq: 0, mode: 'replay' }, full, { method: 'POST', url: `/v1/runs/${foreignRun}:fork`, body: { fromSeq: 0, mode: 'replay' } }, grpc.status.NOT_FOUND, 404);
      await sameRefusal('ForkRun', { runId: completedRun, fromSeq: 0, mode: 'sideways' }, full, { method: 'POST', url: `/v1/runs/${completedRun}:fork`, body: { fromSeq: 0, mode: 'sideways' } }, grpc.status.INVALID_ARGUMENT, 400);
      const past = await sameRefusal('ForkRun', { runId: completedRun, fromSeq: 99_999, mode: 'replay' }, full, { method: 'POST', url: `/v1/runs/${completedRun}:fork`, body: { fromSeq: 99_999, mode: 'replay' } }, grpc.status.FAILED_PRECONDITION, 422);
      expect(past.error).toBe('fork_sequence_not_found');
    });
  });

  describe('CancelRun and idempotency-key', () => {
    it('one key is one cancel across transports: REST answers the recorded gRPC answer as a replay', async () => {
      const runId = await start('vendor.test.grpcctl.slow');
      await waitForStatus(g.t, full, runId, ['running']);
      const key = `grpc-cancel-${runId}`;
      const first = answered(await call('CancelRun', { runId, reason: 'ops' }, full, { 'idempotency-key': key }));
      expect(['cancelling', 'cancelled']).toContain(first.status);
      const viaRest = await rest({ method: 'POST', url: `/v1/runs/${runId}/cancel`, token: full, body: { reason: 'ops' }, headers: { 'idempotency-key': key } });
      expect([viaRest.status, viaRest.headers['openwop-idempotent-replay'], viaRest.body]).toEqual([200, 'true', first]);
      // Another body under the same key is refused the way REST refuses it.
      await sameRefusal('CancelRun', { runId, reason: 'other' }, full, { method: 'POST', url: `/v1/runs/${runId}/cancel`, body: { reason: 'other' } }, grpc.status.ABORTED, 409, { 'idempotency-key': key });
    });
  });

  describe('VerifyAuditLog', () => {
    it('answers the REST AuditVerifyResult (to_seq 0, proto3\'s unset, is the chain head); PERMISSION_DENIED without audit:read; INVALID_ARGUMENT for a reversed range', async () => {
      const auditor = await g.t.key({ scopes: ['audit:read'] });
      // A key mint is an audited action: the chain has at least the entries of this test's keys.
      const viaRest = await rest({ method: 'GET', url: '/v1/audit/verify', token: auditor });
      expect(viaRest.status).toBe(200);
      expect(viaRest.body.chainValid).toBe(true);
      expect(viaRest.body.toSeq).toBeGreaterThan(0);
      expect(answered(await call('VerifyAuditLog', { fromSeq: 0, toSeq: 0 }, auditor))).toEqual(viaRest.body);
      const ranged = await rest({ method: 'GET', url: '/v1/audit/verify?fromSeq=1&toSeq=2', token: auditor });
      expect(answered(await call('VerifyAuditLog', { fromSeq: 1, toSeq: 2 }, auditor))).toEqual(ranged.body);
      await sameRefusal('VerifyAuditLog', { fromSeq: 0, toSeq: 0 }, full, { method: 'GET', url: '/v1/audit/verify' }, grpc.status.PERMISSION_DENIED, 403);
      await sameRefusal('VerifyAuditLog', { fromSeq: 5, toSeq: 2 }, auditor, { method: 'GET', url: '/v1/audit/verify?fromSeq=5&toSeq=2' }, grpc.status.INVALID_ARGUMENT, 400);
    });
  });

  describe('PauseRun and ResumeRun', () => {
    it('pause honours idempotency-key across transports; a second pause and a second resume are ABORTED with the REST 409', async () => {
      const runId = await start('vendor.test.grpcctl.slow');
      await waitForStatus(g.t, full, runId, ['running']);
      const key = `grpc-pause-${runId}`;
      const body = { reason: 'ops', drainPolicy: 'immediate' };
      const paused = answered(await call('PauseRun', { runId, ...body }, full, { 'idempotency-key': key }));
      expect(paused).toEqual({ runId, status: 'paused', pausedAt: expect.stringMatching(ISO) });
      // The same key over REST is the same pause: REST answers what gRPC answered.
      const replay = await rest({ method: 'POST', url: `/v1/runs/${runId}:pause`, token: full, body, headers: { 'idempotency-key': key } });
      expect([replay.status, replay.body]).toEqual([202, paused]);
      // And gRPC replays it too.
      expect(answered(await call('PauseRun', { runId, ...body }, full, { 'idempotency-key': key }))).toEqual(paused);
      await waitForStatus(g.t, full, runId, ['paused'], 10_000);
      const events = await runEvents(g.t, full, runId);
      expect(events.filter((e) => e.type === 'run.paused').map((e) => e.payload)).toEqual([{ drainPolicy: 'immediate', reason: 'ops' }]);
      const again = await sameRefusal('PauseRun', { runId, drainPolicy: 'immediate' }, full, { method: 'POST', url: `/v1/runs/${runId}:pause`, body: { drainPolicy: 'immediate' } }, grpc.status.ABORTED, 409);
      expect(again).toMatchObject({ error: 'run_not_pausable', details: { runStatus: 'paused' } });

      const resumed = answered(await call('ResumeRun', { runId, reason: 'go' }, full));
      expect(resumed).toEqual({ runId, status: 'running', resumedAt: expect.stringMatching(ISO) });
      expect((await runEvents(g.t, full, runId)).filter((e) => e.type === 'run.resumed').map((e) => e.payload)).toEqual([{ reason: 'go' }]);
      const notPaused = await sameRefusal('ResumeRun', { runId }, full, { method: 'POST', url: `/v1/runs/${runId}:resume`, body: {} }, grpc.status.ABORTED, 409);
      expect(notPaused).toMatchObject({ error: 'run_not_paused', details: { runStatus: 'running' } });
      await g.t.http('POST', `/v1/runs/${runId}/cancel`, { token: full, body: {} });
    });

    it('ResumeRun answers the body REST answers for the same resume', async () => {
      const [a, b] = [await start('vendor.test.grpcctl.slow'), await start('vendor.test.grpcctl.slow')];
      for (const runId of [a, b]) {
        await waitForStatus(g.t, full, runId, ['running']);
        expect((await rest({ method: 'POST', url: `/v1/runs/${runId}:pause`, token: full, body: { drainPolicy: 'immediate' } })).status).toBe(202);
        await waitForStatus(g.t, full, runId, ['paused'], 10_000);
      }
      const viaRest = await rest({ method: 'POST', url: `/v1/runs/${a}:resume`, token: full, body: { reason: 'same' } });
      expect(viaRest.status).toBe(202);
      const viaGrpc = answered(await call('ResumeRun', { runId: b, reason: 'same' }, full));
      expect(viaGrpc).toEqual({ ...viaRest.body, runId: b, resumedAt: viaGrpc.resumedAt });
      await g.t.http('POST', '/v1/runs:bulk-cancel', { token: full, body: { runIds: [a, b] } });
    });

    it('PERMISSION_DENIED without runs:cancel, NOT_FOUND for unknown and foreign runs, INVALID_ARGUMENT for what the DTO refuses', async () => {
      const live = await start('vendor.test.grpcctl.slow');
      for (const [method, action] of [['PauseRun', 'pause'], ['ResumeRun', 'resume']] as const) {
        const denied = await sameRefusal(method, { runId: live }, reader, { method: 'POST', url: `/v1/runs/${live}:${action}`, body: {} }, grpc.status.PERMISSION_DENIED, 403);
        expect(denied.details).toEqual({ requiredScopes: ['runs:cancel'], missingScopes: ['runs:cancel'] });
        await sameRefusal(method, { runId: UNKNOWN_RUN }, full, { method: 'POST', url: `/v1/runs/${UNKNOWN_RUN}:${action}`, body: {} }, grpc.status.NOT_FOUND, 404);
        await sameRefusal(method, { runId: foreignRun }, full, { method: 'POST', url: `/v1/runs/${foreignRun}:${action}`, body: {} }, grpc.status.NOT_FOUND, 404);
        const longReason = { reason: 'r'.repeat(501) };
        await sameRefusal(method, { runId: live, ...longReason }, full, { method: 'POST', url: `/v1/runs/${live}:${action}`, body: longReason }, grpc.status.INVALID_ARGUMENT, 400);
      }
      const later = { drainPolicy: 'later' };
      const bad = await sameRefusal('PauseRun', { runId: live, ...later }, full, { method: 'POST', url: `/v1/runs/${live}:pause`, body: later }, grpc.status.INVALID_ARGUMENT, 400);
      expect(bad.error).toBe('validation_error');
      // A malformed Idempotency-Key is refused by the service, over both transports, in the same words.
      await sameRefusal('PauseRun', { runId: live }, full, { method: 'POST', url: `/v1/runs/${live}:pause`, body: {} }, grpc.status.INVALID_ARGUMENT, 400, { 'idempotency-key': 'has space' });
      expect((await waitForStatus(g.t, full, live, ['running'])).status).toBe('running');
      await g.t.http('POST', `/v1/runs/${live}/cancel`, { token: full, body: {} });
    });
  });

  describe('BulkCancelRuns', () => {
    it('cancels each id on its own, in request order, with the results REST answers (the error code as ErrorEnvelope.error)', async () => {
      const live = await start('vendor.test.grpcctl.slow');
      await waitForStatus(g.t, full, live, ['running']);
      const runIds = [live, 'run-does-not-exist-xxxxxxxx', completedRun, foreignRun];
      const first = answered(await call('BulkCancelRuns', { runIds, reason: 'grpc bulk' }, full));
      expect(first.results.map((r: Json) => [r.runId, r.ok])).toEqual([[live, true], ['run-does-not-exist-xxxxxxxx', false], [completedRun, false], [foreignRun, false]]);
      expect(['cancelling', 'cancelled']).toContain(first.results[0].status);
      await waitForStatus(g.t, full, live, ['cancelled']);
      // (The run.cancelled of a run a replica executes carries the engine's reason, not the request's, over REST too.)
      expect((await runEvents(g.t, full, live)).filter((e) => e.type === 'run.cancelled')).toHaveLength(1);
      // Another tenant's run is not touched, and answered like an unknown one.
      expect((await waitForStatus(g.t, other, foreignRun, ['running', 'pending'])).status).not.toBe('cancelled');
      expect(first.results[3].error).toEqual(first.results[1].error);

      // Now that nothing changes any more, the same request over both transports: one answer.
      const viaRest = await rest({ method: 'POST', url: '/v1/runs:bulk-cancel', token: full, body: { runIds } });
      expect(viaRest.status).toBe(200);
      const viaGrpc = answered(await call('BulkCancelRuns', { runIds }, full));
      const asEnvelope = (e: Json) => ({ error: e.code, message: e.message, ...(e.details ? { details: e.details } : {}) });
      expect(viaGrpc).toEqual({ results: viaRest.body.results.map((r: Json) => (r.error ? { ...r, error: asEnvelope(r.error) } : r)) });
      expect(viaGrpc.results).toEqual([
        { runId: live, ok: true, status: 'cancelled' },
        { runId: 'run-does-not-exist-xxxxxxxx', ok: false, error: { error: 'not_found', message: 'No such run.' } },
        { runId: completedRun, ok: false, error: { error: 'run_terminal', message: 'The run is already completed.', details: { runStatus: 'completed' } } },
        { runId: foreignRun, ok: false, error: { error: 'not_found', message: 'No such run.' } },
      ]);
    });

    it('PERMISSION_DENIED without runs:cancel; INVALID_ARGUMENT for an empty list, too many ids and a long reason', async () => {
      await sameRefusal('BulkCancelRuns', { runIds: [completedRun] }, reader, { method: 'POST', url: '/v1/runs:bulk-cancel', body: { runIds: [completedRun] } }, grpc.status.PERMISSION_DENIED, 403);
      // proto3 sends no empty list: an absent run_ids is read as [], which REST refuses as such.
      await sameRefusal('BulkCancelRuns', {}, full, { method: 'POST', url: '/v1/runs:bulk-cancel', body: { runIds: [] } }, grpc.status.INVALID_ARGUMENT, 400);
      const many = { runIds: Array.from({ length: 101 }, (_, i) => `run-overflow-${i}`) };
      const tooMany = await sameRefusal('BulkCancelRuns', many, full, { method: 'POST', url: '/v1/runs:bulk-cancel', body: many }, grpc.status.INVALID_ARGUMENT, 400);
      expect(tooMany.details).toEqual({ field: 'runIds', maxRunIds: 100 });
      const long = { runIds: [completedRun], reason: 'r'.repeat(513) };
      await sameRefusal('BulkCancelRuns', long, full, { method: 'POST', url: '/v1/runs:bulk-cancel', body: long }, grpc.status.INVALID_ARGUMENT, 400);
    });
  });

  describe('ResolveInterruptByRun', () => {
    it('records a vote and answers what REST answers for the same vote', async () => {
      const runId = await start('vendor.test.grpcctl.quorum');
      await waitForStatus(g.t, full, runId, ['waiting-approval']);
      const viaRest = await rest({ method: 'POST', url: `/v1/runs/${runId}/interrupts/gate`, token: full, body: { resumeValue: { action: 'accept', voter: 'alice' } } });
      expect(viaRest.status).toBe(200);
      expect(viaRest.body).toMatchObject({ runId, nodeId: 'gate', status: 'waiting-approval', interruptState: 'pending' });
      const viaGrpc = answered(await call('ResolveInterruptByRun', { runId, nodeId: 'gate', resumeValue: { action: 'accept', voter: 'bob' } }, full));
      expect(viaGrpc).toEqual(viaRest.body);
      const snap = await waitForStatus(g.t, full, runId, ['waiting-approval']);
      expect(snap.interrupt.quorum.votes.map((v: Json) => v.voter)).toEqual(['alice', 'bob']);
      await g.t.http('POST', `/v1/runs/${runId}/cancel`, { token: full, body: {} });
    });

    it('PERMISSION_DENIED without approvals:respond; NOT_FOUND for unknown and foreign runs and an unknown node; INVALID_ARGUMENT for a missing or refused resumeValue', async () => {
      const runId = await start('vendor.test.grpcctl.quorum');
      await waitForStatus(g.t, full, runId, ['waiting-approval']);
      const vote = { resumeValue: { action: 'accept' } };
      const denied = await sameRefusal('ResolveInterruptByRun', { runId, nodeId: 'gate', ...vote }, reader, { method: 'POST', url: `/v1/runs/${runId}/interrupts/gate`, body: vote }, grpc.status.PERMISSION_DENIED, 403);
      expect(denied.details).toEqual({ requiredScopes: ['approvals:respond'], missingScopes: ['approvals:respond'] });
      await sameRefusal('ResolveInterruptByRun', { runId: UNKNOWN_RUN, nodeId: 'gate', ...vote }, full, { method: 'POST', url: `/v1/runs/${UNKNOWN_RUN}/interrupts/gate`, body: vote }, grpc.status.NOT_FOUND, 404);
      await sameRefusal('ResolveInterruptByRun', { runId: foreignRun, nodeId: 'wait', ...vote }, full, { method: 'POST', url: `/v1/runs/${foreignRun}/interrupts/wait`, body: vote }, grpc.status.NOT_FOUND, 404);
      const noNode = await sameRefusal('ResolveInterruptByRun', { runId, nodeId: 'no-such-node', ...vote }, full, { method: 'POST', url: `/v1/runs/${runId}/interrupts/no-such-node`, body: vote }, grpc.status.NOT_FOUND, 404);
      expect(noNode.error).toBe('interrupt_not_found');
      await sameRefusal('ResolveInterruptByRun', { runId, nodeId: 'gate' }, full, { method: 'POST', url: `/v1/runs/${runId}/interrupts/gate`, body: {} }, grpc.status.INVALID_ARGUMENT, 400);
      await sameRefusal('ResolveInterruptByRun', { runId, nodeId: 'gate', resumeValue: null }, full, { method: 'POST', url: `/v1/runs/${runId}/interrupts/gate`, body: { resumeValue: null } }, grpc.status.INVALID_ARGUMENT, 400);
      const maybe = { resumeValue: { action: 'maybe' } };
      const schema = await sameRefusal('ResolveInterruptByRun', { runId, nodeId: 'gate', ...maybe }, full, { method: 'POST', url: `/v1/runs/${runId}/interrupts/gate`, body: maybe }, grpc.status.INVALID_ARGUMENT, 400);
      expect(schema.details?.field).toBe('resumeValue');
      expect((await waitForStatus(g.t, full, runId, ['waiting-approval'])).interrupt.quorum.votes).toEqual([]);
      await g.t.http('POST', `/v1/runs/${runId}/cancel`, { token: full, body: {} });
    });
  });

  describe('InspectInterruptByToken and ResolveInterruptByToken (public: the signed token is the authority)', () => {
    const waitingToken = async (): Promise<{ runId: string; token: string }> => {
      const runId = await start('vendor.test.grpcctl.event');
      const snap = await waitForStatus(g.t, full, runId, ['waiting-external']);
      return { runId, token: snap.interrupt.interruptToken as string };
    };

    it('inspect answers the REST InterruptPayload, without a credential and whatever bearer is sent', async () => {
      const { runId, token } = await waitingToken();
      const viaRest = await rest({ method: 'GET', url: `/v1/interrupts/${token}` });
      expect(viaRest.status).toBe(200);
      expect(viaRest.body).toMatchObject({ kind: 'external-event', data: { eventType: 'order.status', correlation: { orderId: 'o-1' } } });
      expect(answered(await call('InspectInterruptByToken', { token }))).toEqual(viaRest.body);
      // A public route reads no credential: a bad bearer changes nothing, as over REST.
      expect(answered(await call('InspectInterruptByToken', { token }, 'owk_not-a-real-key'))).toEqual(viaRest.body);
      await g.t.http('POST', `/v1/runs/${runId}/cancel`, { token: full, body: {} });
    });

    it('resolve answers what REST answers, once: a replay is ABORTED with the REST 409', async () => {
      const [a, b] = [await waitingToken(), await waitingToken()];
      const event = { orderId: 'o-1', status: 'shipped' };
      const viaRest = await rest({ method: 'POST', url: `/v1/interrupts/${a.token}`, body: { resumeValue: event } });
      expect(viaRest.status).toBe(200);
      const viaGrpc = answered(await call('ResolveInterruptByToken', { token: b.token, resumeValue: event }));
      expect(viaGrpc).toEqual({ ...viaRest.body, runId: b.runId, interruptId: viaGrpc.interruptId });
      expect(viaGrpc).toMatchObject({ runId: b.runId, nodeId: 'wait', interruptState: 'resolved' });
      const done = await waitForStatus(g.t, full, b.runId, ['completed', 'failed']);
      expect([done.status, done.outputs]).toEqual(['completed', { wait: { event } }]);
      const replay = await sameRefusal('ResolveInterruptByToken', { token: b.token, resumeValue: event }, undefined, { method: 'POST', url: `/v1/interrupts/${b.token}`, body: { resumeValue: event } }, grpc.status.ABORTED, 409);
      expect(replay.error).toBe('interrupt_already_resolved');
    });

    it('NOT_FOUND for a forged token, INVALID_ARGUMENT for a malformed one or a missing resumeValue, FAILED_PRECONDITION for a mismatched event', async () => {
      const { runId, token } = await waitingToken();
      const [payload] = token.split('.');
      const forged = `${payload}.${Buffer.alloc(32).toString('base64url')}`;
      const notFound = await sameRefusal('InspectInterruptByToken', { token: forged }, undefined, { method: 'GET', url: `/v1/interrupts/${forged}` }, grpc.status.NOT_FOUND, 404);
      expect(notFound.error).toBe('interrupt_not_found');
      await sameRefusal('ResolveInterruptByToken', { token: forged, resumeValue: {} }, undefined, { method: 'POST', url: `/v1/interrupts/${forged}`, body: { resumeValue: {} } }, grpc.status.NOT_FOUND, 404);
      const malformed = '!!!x!!!';
      await sameRefusal('InspectInterruptByToken', { token: malformed }, undefined, { method: 'GET', url: `/v1/interrupts/${encodeURIComponent(malformed)}` }, grpc.status.INVALID_ARGUMENT, 400);
      await sameRefusal('ResolveInterruptByToken', { token: malformed, resumeValue: {} }, undefined, { method: 'POST', url: `/v1/interrupts/${encodeURIComponent(malformed)}`, body: { resumeValue: {} } }, grpc.status.INVALID_ARGUMENT, 400);
      const missing = await sameRefusal('ResolveInterruptByToken', { token }, undefined, { method: 'POST', url: `/v1/interrupts/${token}`, body: {} }, grpc.status.INVALID_ARGUMENT, 400);
      expect(missing).toEqual({ error: 'validation_error', message: 'The body needs resumeValue.', details: { field: 'resumeValue' } });
      const mismatch = { resumeValue: { orderId: 'o-2' } };
      const refusedEvent = await sameRefusal('ResolveInterruptByToken', { token, ...mismatch }, undefined, { method: 'POST', url: `/v1/interrupts/${token}`, body: mismatch }, grpc.status.FAILED_PRECONDITION, 422);
      expect(refusedEvent.error).toBe('correlation_mismatch');
      expect((await waitForStatus(g.t, full, runId, ['waiting-external'])).status).toBe('waiting-external');
      await g.t.http('POST', `/v1/runs/${runId}/cancel`, { token: full, body: {} });
    });
  });

  describe('GetArtifact', () => {
    it('answers the artifact REST serves: its reference, and its bytes as base64', async () => {
      const runId = await start('vendor.test.grpcctl.artifact');
      await waitForStatus(g.t, full, runId, ['completed']);
      const snap = (await rest({ method: 'GET', url: `/v1/runs/${runId}`, token: full })).body;
      const [ref] = snap.artifacts;
      const bytes = await rest({ method: 'GET', url: `/v1/runs/${runId}/artifacts/${ref.artifactId}`, token: full });
      expect(bytes.status).toBe(200);
      const viaGrpc = answered(await call('GetArtifact', { runId, artifactId: ref.artifactId }, full));
      expect(viaGrpc).toEqual({ ...ref, runId, contentBase64: Buffer.from(bytes.text, 'utf8').toString('base64') });
      expect(Buffer.from(viaGrpc.contentBase64, 'base64').toString('utf8')).toBe('hello over two transports');
    });

    it('NOT_FOUND like REST for an unknown artifact of a visible run, an unknown run and another tenant\'s run; PERMISSION_DENIED without artifacts:read', async () => {
      const known = await sameRefusal('GetArtifact', { runId: completedRun, artifactId: 'art-1' }, full, { method: 'GET', url: `/v1/runs/${completedRun}/artifacts/art-1` }, grpc.status.NOT_FOUND, 404);
      expect(known).toEqual({ error: 'not_found', message: 'No such artifact.', details: { artifactId: 'art-1' } });
      const unknown = await sameRefusal('GetArtifact', { runId: UNKNOWN_RUN, artifactId: 'art-1' }, full, { method: 'GET', url: `/v1/runs/${UNKNOWN_RUN}/artifacts/art-1` }, grpc.status.NOT_FOUND, 404);
      const foreign = await sameRefusal('GetArtifact', { runId: foreignRun, artifactId: 'art-1' }, full, { method: 'GET', url: `/v1/runs/${foreignRun}/artifacts/art-1` }, grpc.status.NOT_FOUND, 404);
      expect(foreign).toEqual(unknown);
      const denied = await sameRefusal('GetArtifact', { runId: completedRun, artifactId: 'art-1' }, reader, { method: 'GET', url: `/v1/runs/${completedRun}/artifacts/art-1` }, grpc.status.PERMISSION_DENIED, 403);
      expect(denied.details).toEqual({ requiredScopes: ['artifacts:read'], missingScopes: ['artifacts:read'] });
    });
  });

  describe('RegisterWebhook and UnregisterWebhook', () => {
    const registration = { url: 'https://hooks.example/grpc', events: ['run.completed', 'run.failed'], tags: ['grpc'] };

    it('register answers the REST registration; REST then reads the subscription gRPC made; unregister answers Empty and REST sees it gone', async () => {
      const viaRest = await rest({ method: 'POST', url: '/v1/webhooks', token: full, body: registration });
      expect(viaRest.status).toBe(201);
      const viaGrpc = answered(await call('RegisterWebhook', registration, full));
      expect(viaGrpc.webhookId).toMatch(/^wh_[0-9a-f]{24}$/);
      expect(viaGrpc.secret).toMatch(/^[0-9a-f]{64}$/);
      // Ids, secrets and times are each registration's own; everything else is REST's.
      const own = ['webhookId', 'secret', 'secretFingerprint', 'createdAt'];
      expect(Object.keys(viaGrpc).sort()).toEqual(Object.keys(viaRest.body).sort());
      expect(Object.fromEntries(Object.entries(viaGrpc).filter(([k]) => !own.includes(k)))).toEqual(Object.fromEntries(Object.entries(viaRest.body).filter(([k]) => !own.includes(k))));
      const read = await rest({ method: 'GET', url: `/v1/webhooks/${viaGrpc.webhookId}`, token: full });
      expect(read.status).toBe(200);
      const { secret: _secret, ...view } = viaGrpc;
      expect(read.body).toEqual(view);

      expect(answered(await call('UnregisterWebhook', { webhookId: viaGrpc.webhookId }, full))).toEqual({});
      expect((await rest({ method: 'GET', url: `/v1/webhooks/${viaGrpc.webhookId}`, token: full })).status).toBe(404);
      // Unregistering it again is the REST 404; so is another tenant's subscription.
      await sameRefusal('UnregisterWebhook', { webhookId: viaGrpc.webhookId }, full, { method: 'DELETE', url: `/v1/webhooks/${viaGrpc.webhookId}` }, grpc.status.NOT_FOUND, 404);
      await sameRefusal('UnregisterWebhook', { webhookId: viaRest.body.webhookId }, other, { method: 'DELETE', url: `/v1/webhooks/${viaRest.body.webhookId}` }, grpc.status.NOT_FOUND, 404);
      expect((await rest({ method: 'GET', url: `/v1/webhooks/${viaRest.body.webhookId}`, token: full })).status).toBe(200);
      await sameRefusal('UnregisterWebhook', { webhookId: 'wh_000000000000000000000000' }, full, { method: 'DELETE', url: '/v1/webhooks/wh_000000000000000000000000' }, grpc.status.NOT_FOUND, 404);
    });

    it('the any-of scope rule of the REST routes: runs:read and one of webhooks:manage or runs:create to register; one of them to unregister', async () => {
      const managerOnly = await g.t.key({ scopes: ['webhooks:manage'] });
      const creator = await g.t.key({ scopes: ['runs:read', 'runs:create'] });
      const denied = await sameRefusal('RegisterWebhook', registration, reader, { method: 'POST', url: '/v1/webhooks', body: registration }, grpc.status.PERMISSION_DENIED, 403);
      expect(denied.details).toEqual({ requiredScopes: ['runs:read'], requiredAnyOfScopes: ['webhooks:manage', 'runs:create'] });
      const noRead = await sameRefusal('RegisterWebhook', registration, managerOnly, { method: 'POST', url: '/v1/webhooks', body: registration }, grpc.status.PERMISSION_DENIED, 403);
      expect(noRead.details).toEqual({ requiredScopes: ['runs:read'], missingScopes: ['runs:read'] });
      // runs:create covers registering, as on REST.
      const made = answered(await call('RegisterWebhook', registration, creator));
      await sameRefusal('UnregisterWebhook', { webhookId: made.webhookId }, reader, { method: 'DELETE', url: `/v1/webhooks/${made.webhookId}` }, grpc.status.PERMISSION_DENIED, 403);
      expect((await rest({ method: 'GET', url: `/v1/webhooks/${made.webhookId}`, token: full })).status).toBe(200);
      // webhooks:manage alone covers unregistering (its @Scopes are empty).
      expect(answered(await call('UnregisterWebhook', { webhookId: made.webhookId }, managerOnly))).toEqual({});
      expect((await rest({ method: 'GET', url: `/v1/webhooks/${made.webhookId}`, token: full })).status).toBe(404);
    });

    it('INVALID_ARGUMENT for what the REST DTO and the URL guard refuse, in the same words', async () => {
      const cases: Json[] = [
        { url: 'https://hooks.example/x', events: ['completed'] },
        { url: 'https://hooks.example/x', events: ['run.completed'], secret: 'mine' },
        { url: 'https://hooks.example/x', events: ['run.completed'], tags: ['x'.repeat(129)] },
        { url: '', events: ['run.completed'] },
        { url: 'https://127.0.0.1/', events: ['run.completed'] },
        { url: 'http://hooks.example/x', events: ['run.completed'] },
      ];
      for (const body of cases) await sameRefusal('RegisterWebhook', body, full, { method: 'POST', url: '/v1/webhooks', body }, grpc.status.INVALID_ARGUMENT, 400);
      // proto3 sends no empty list: absent events are [], which REST refuses as such.
      await sameRefusal('RegisterWebhook', { url: 'https://hooks.example/x' }, full, { method: 'POST', url: '/v1/webhooks', body: { url: 'https://hooks.example/x', events: [] } }, grpc.status.INVALID_ARGUMENT, 400);
      const list = await rest({ method: 'GET', url: '/v1/webhooks', token: full });
      expect(list.body.webhooks.map((w: Json) => w.url)).not.toContain('https://127.0.0.1/');
    });
  });
});

describe('gRPC transport: an expired interrupt token', () => {
  let g: GrpcTestApp;

  beforeAll(async () => {
    g = await createGrpcTestApp({ openApi: false, configFile: { runs: { interrupts: { tokenTtlMs: 1000 } } } });
    await installChains(g.t, 'default', 'vendor.test.grpcctl', { 'vendor.test.grpcctl.event': CHAINS['vendor.test.grpcctl.event'] });
  });

  afterAll(async () => {
    await g?.close();
  });

  it('is NOT_FOUND with the REST 410 envelope (interrupt_expired) for inspect and resolve, and resolves nothing', async () => {
    const key = await g.t.key({ scopes: ['runs:create', 'runs:read', 'runs:cancel'] });
    const runId = (await g.t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.test.grpcctl.event' } })).body.runId as string;
    const snap = await waitForStatus(g.t, key, runId, ['waiting-external']);
    const token = snap.interrupt.interruptToken as string;
    await new Promise((res) => setTimeout(res, Math.max(0, Date.parse(snap.interrupt.tokenExpiresAt) - Date.now()) + 100));
    const event = { resumeValue: { orderId: 'o-1' } };
    for (const [method, restCall, grpcBody] of [
      ['InspectInterruptByToken', { method: 'GET', url: `/v1/interrupts/${token}` }, { token }],
      ['ResolveInterruptByToken', { method: 'POST', url: `/v1/interrupts/${token}`, body: event }, { token, ...event }],
    ] as const) {
      const viaRest = await g.t.http(restCall.method, restCall.url, { body: 'body' in restCall ? restCall.body : undefined });
      const e = refused(await g.engine.call(method, grpcBody, metadata()));
      expect([viaRest.status, viaRest.body.error]).toEqual([410, 'interrupt_expired']);
      expect({ method, code: grpc.status[e.code], envelope: e.envelope }).toEqual({ method, code: 'NOT_FOUND', envelope: viaRest.body });
    }
    expect((await waitForStatus(g.t, key, runId, ['waiting-external'])).status).toBe('waiting-external');
    await g.t.http('POST', `/v1/runs/${runId}/cancel`, { token: key, body: {} });
  });
});
