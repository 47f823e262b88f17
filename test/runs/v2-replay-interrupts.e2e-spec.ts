/**
 * Replay, interrupts and approvals under both protocol majors (issue 37; docs/versions.md): one host
 * serving 1 and 2, the same handlers. A run created under either major is forked and diffed under the
 * other; the effect-seam manifest and a run's effect ledger read the same at both; a closed interrupt,
 * an approver list and a v2 token under a kid the host does not hold answer as each major says.
 */
import { createTestApp, TestApp } from '../support/test-app';
import { perMajor, waitForStatus } from './run-kit';

describe('replay and interrupts under majors 1 and 2 (OPENWOP_PROTOCOL_MAJORS=1,2)', () => {
  let t: TestApp;
  let key: string;
  const TENANT = 'default';
  const V2 = { 'openwop-version': '2.0' };

  const { at, idAt, bare } = perMajor(() => t, () => key, TENANT);
  const create = async (major: 1 | 2, workflowId: string): Promise<string> => {
    const r = await at(major, 'POST', '/runs', { workflowId });
    expect(r.status).toBe(201);
    return bare(r.body.runId as string);
  };

  beforeAll(async () => {
    t = await createTestApp({ env: { OPENWOP_TEST_SEAMS: 'true', OPENWOP_PROTOCOL_MAJORS: '1,2' } });
    key = await t.key({ scopes: ['runs:create', 'runs:read', 'runs:cancel', 'approvals:respond'] });
  });
  afterAll(() => t?.close());

  it('the v2 root lists the replay and interrupt records; the manifest is one document at both majors', async () => {
    const root = await t.http('GET', '/.well-known/openwop', { headers: V2 });
    expect(root.body.replay).toEqual({ status: 'experimental', since: '2.0', until: expect.any(String), witness: 'witnessable-gated', modes: ['fork', 'branch'], effectSeamsManifest: '/host/effect-seams' });
    expect(root.body.interrupt).toMatchObject({ status: 'experimental', since: '2.0', tokenAlgs: ['hs256'], refKinds: ['principal'] });
    const v1 = await t.http('GET', '/v1/host/effect-seams', { token: key });
    const v2 = await t.http('GET', '/host/effect-seams', { token: key, headers: V2 });
    expect([v1.status, v2.status]).toEqual([200, 200]);
    expect(v2.body).toEqual(v1.body);
    expect(v1.body.seams.length).toBeGreaterThan(0);
    for (const row of v1.body.seams) expect(row).toMatchObject({ guarded: true, guardedBy: expect.stringMatching(/./), kind: 'http' });
    expect(v2.headers['openwop-version']).toBe('2.0');
  });

  it.each([
    [1, 2],
    [2, 1],
  ] as const)('a run created under major %i is forked and diffed under major %i', async (made, used) => {
    const source = await create(made, 'conformance-multi-node');
    const other = await create(made, 'conformance-multi-node');
    await waitForStatus(t, key, source, ['completed']);
    await waitForStatus(t, key, other, ['completed']);
    // The events as the log numbers them (v1: from 1); the fork point is the first node.completed,
    // written in the forking major's numbering (v2 counts from 0).
    const events = async (id: string) => ((await t.http('GET', `/v1/runs/${id}/events/poll?timeout=0`, { token: key })).body.events as Array<{ type: string; sequence: number; payload: unknown }>);
    const src = await events(source);
    const v1From = src.find((e) => e.type === 'node.completed')!.sequence;
    const fromSeq = used === 2 ? v1From - 1 : v1From;
    const fork = await at(used, 'POST', `/runs/${idAt(used, source)}:fork`, { mode: 'replay', fromSeq });
    expect(fork.status).toBe(201);
    expect(fork.body.fromSeq).toBe(fromSeq);
    expect(fork.body.sourceRunId).toBe(used === 2 ? `${TENANT}/${source}` : source);
    const forkId = bare(fork.body.runId);
    await waitForStatus(t, key, forkId, ['completed']);
    // The prefix is inherited exactly (the source's events below the point), and the event at the point is re-executed.
    const forked = await events(forkId);
    expect(forked.filter((e) => e.sequence < v1From).map((e) => [e.sequence, e.type, e.payload])).toEqual(src.filter((e) => e.sequence < v1From).map((e) => [e.sequence, e.type, e.payload]));
    expect(forked.find((e) => e.sequence === v1From)?.type).not.toBe('node.completed');

    // Two runs of one workflow: identical under major 2 (run-scoped clock fields left out), divergent
    // under major 1 where durationMs is compared; `against` takes the major's id form.
    const diff = await at(used, 'GET', `/runs/${idAt(used, source)}:diff?against=${encodeURIComponent(used === 2 ? `${TENANT}/${other}` : other)}`);
    expect(diff.status).toBe(200);
    if (used === 2) {
      expect(diff.body).toEqual({ a: `${TENANT}/${source}`, b: `${TENANT}/${other}`, divergedAtSeq: null, eventDiffs: [], stateDiff: {} });
      const failed = await create(2, 'conformance-failure');
      await waitForStatus(t, key, failed, ['failed']);
      const apart = await at(2, 'GET', `/runs/${idAt(2, source)}:diff?against=${encodeURIComponent(`${TENANT}/${failed}`)}`);
      // v2 numbering: the logs part at run.started (another workflowId), sequence 0.
      expect([apart.body.divergedAtSeq, apart.body.eventDiffs[0].seq, apart.body.eventDiffs[0].aEvent.sequence]).toEqual([0, 0, 0]);
      // Another tenant's id in `against` is refused, not resolved.
      expect((await at(2, 'GET', `/runs/${idAt(2, source)}:diff?against=${encodeURIComponent(`tenant-b/${other}`)}`)).body.error).toBe('id_tenant_mismatch');
    } else {
      expect(diff.body).toMatchObject({ a: source, b: other });
      expect(diff.body.eventDiffs.every((d: { aEvent?: { payload?: { durationMs?: unknown } } }) => typeof d.aEvent?.payload?.durationMs === 'number')).toBe(true);
    }
  });

  it('a run’s effect ledger reads at both majors, effect ids bound under 2, and a replay fork records no effect', async () => {
    // The idempotency seam has eight executors of one run reach one effect: the ledger performs it once.
    const seam = await t.http('POST', '/v1/host/sample/test/idempotency/concurrent-claim', { token: key, body: { executors: 8 } });
    expect(seam.status).toBe(200);
    const runId = seam.body.runId as string;
    const v1 = await at(1, 'GET', `/runs/${runId}/effects`);
    const v2 = await at(2, 'GET', `/runs/${idAt(2, runId)}/effects`);
    expect(v1.body).toEqual({ runId, effects: [{ effectId: seam.body.logicalInvocationId, nodeId: 'concurrent-claim', attempt: 1, keying: 'activity-recipe', providerKey: expect.any(String), state: 'completed', at: expect.any(String) }] });
    expect(v2.body.runId).toBe(`${TENANT}/${runId}`);
    expect(v2.body.effects).toEqual([{ ...v1.body.effects[0], effectId: `${TENANT}/${seam.body.logicalInvocationId}` }]);
    await waitForStatus(t, key, runId, ['completed']);
    const fork = await at(2, 'POST', `/runs/${idAt(2, runId)}:fork`, { mode: 'replay' });
    expect(fork.status).toBe(201);
    await waitForStatus(t, key, bare(fork.body.runId), ['completed']);
    expect((await at(2, 'GET', `/runs/${idAt(2, bare(fork.body.runId))}/effects`)).body.effects).toEqual([]);
    expect((await at(1, 'GET', '/runs/00000000-0000-4000-8000-000000000000/effects')).status).toBe(404);
  });

  it('a resolve of a closed interrupt: gone (404) at major 1, 409 interrupt_already_resolved at major 2, after completion and after cancel', async () => {
    for (const end of ['completed', 'cancelled'] as const) {
      const runId = await create(1, 'conformance-approval');
      await waitForStatus(t, key, runId, ['waiting-approval']);
      if (end === 'completed') {
        const ok = await at(2, 'POST', `/runs/${idAt(2, runId)}/interrupts/gate`, { resumeValue: { action: 'accept' } });
        expect([ok.status, ok.body.interruptState]).toEqual([200, 'resolved']);
      } else {
        expect((await at(1, 'POST', `/runs/${runId}/cancel`, {})).status).toBe(200);
      }
      await waitForStatus(t, key, runId, [end]);
      const v1 = await at(1, 'POST', `/runs/${runId}/interrupts/gate`, { resumeValue: { action: 'accept' } });
      const v2 = await at(2, 'POST', `/runs/${idAt(2, runId)}/interrupts/gate`, { resumeValue: { action: 'accept' } });
      expect([end, v1.status, v1.body.error]).toEqual([end, 404, 'interrupt_not_found']);
      expect([end, v2.status, v2.body.error]).toEqual([end, 409, 'interrupt_already_resolved']);
      // A step that never had an interrupt, and an unknown run, are 404 at both majors.
      expect((await at(2, 'POST', `/runs/${idAt(2, runId)}/interrupts/no-such-node`, { resumeValue: { action: 'accept' } })).status).toBe(404);
      expect((await at(2, 'POST', `/runs/${TENANT}~2Fopenwopconformanceunknown/interrupts/gate`, { resumeValue: { action: 'accept' } })).body.error).toBe('not_found');
    }
  });

  it.each([1, 2] as const)('an approver list is enforced under major %i: the caller is refused 403 and the gate stays pending', async (major) => {
    const runId = await create(major, 'conformance-approval-approvers');
    await waitForStatus(t, key, runId, ['waiting-approval']);
    for (const action of ['accept', 'reject']) {
      const r = await at(major, 'POST', `/runs/${idAt(major, runId)}/interrupts/gate`, { resumeValue: { action } });
      expect([r.status, r.body.error]).toEqual([403, 'forbidden']);
    }
    expect((await at(major, 'GET', `/runs/${idAt(major, runId)}`)).body.status).toBe('waiting-approval');
    await at(1, 'POST', `/runs/${runId}/cancel`, {});
  });

  it('a rejected approval fails the run: approval_denied at major 1, approval_rejected (never retryable) at major 2, the same run', async () => {
    const runId = await create(2, 'conformance-approval');
    await waitForStatus(t, key, runId, ['waiting-approval']);
    expect((await at(2, 'POST', `/runs/${idAt(2, runId)}/interrupts/gate`, { resumeValue: { action: 'reject' } })).body.interruptState).toBe('rejected');
    await waitForStatus(t, key, runId, ['failed']);
    const [v1, v2] = [(await at(1, 'GET', `/runs/${runId}`)).body, (await at(2, 'GET', `/runs/${idAt(2, runId)}`)).body];
    expect([v1.error.code, v2.error.code]).toEqual(['approval_denied', 'approval_rejected']);
    const failed = async (major: 1 | 2) => ((await at(major, 'GET', `/runs/${idAt(major, runId)}/events/poll?timeout=0`)).body.events as Array<{ type: string; payload: { error?: unknown; failedNodeId?: string } }>).filter((e) => e.type === 'node.failed' || e.type === 'run.failed');
    expect((await failed(1)).map((e) => e.payload.error)).toEqual([expect.objectContaining({ code: 'approval_denied' }), expect.objectContaining({ code: 'approval_denied' })]);
    const v2Failed = await failed(2);
    expect(v2Failed.map((e) => [e.type, e.payload.error])).toEqual([
      ['node.failed', expect.objectContaining({ code: 'approval_rejected', retryable: false })],
      ['run.failed', expect.objectContaining({ code: 'approval_rejected', retryable: false })],
    ]);
    expect(v2Failed[1].payload.failedNodeId).toBe('gate');
  });

  it('a v1 run waiting on an external event, read under major 2: its interrupt id bound, an ow2 token on the unversioned route, which resolves it', async () => {
    const runId = await create(1, 'conformance-interrupt-external-event');
    const v1 = await waitForStatus(t, key, runId, ['waiting-external']);
    // The closed v2 snapshot has no seat for the interrupt: it is kept under the host's run extension.
    const v2 = (await at(2, 'GET', `/runs/${idAt(2, runId)}`)).body.extensions['openwop-host.run'];
    expect(v2.interrupt.interruptId).toBe(`${TENANT}/${v1.interrupt.interruptId}`);
    expect(v1.interrupt.interruptToken).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    expect(v2.interrupt.interruptToken).toMatch(/^ow2\.hs256\.k[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    expect(v2.interrupt.callbackUrl).toBe(`/interrupts/${v2.interrupt.interruptToken}`);
    // Both schemes name the same interrupt, at either route.
    for (const [url, headers] of [[`/v1/interrupts/${v2.interrupt.interruptToken}`, {}], [`/interrupts/${v1.interrupt.interruptToken}`, V2]] as const) {
      const inspected = await t.http('GET', url, { headers });
      expect([url, inspected.status, inspected.body.kind]).toEqual([url, 200, 'external-event']);
    }
    const resolved = await t.http('POST', v2.interrupt.callbackUrl, { headers: V2, body: { resumeValue: { orderId: 'fixture-order-1', status: 'completed' } } });
    expect([resolved.status, resolved.body.runId, resolved.body.interruptId]).toEqual([200, `${TENANT}/${runId}`, `${TENANT}/${v1.interrupt.interruptId}`]);
    await waitForStatus(t, key, runId, ['completed']);
    // Spent: the token's interrupt is no longer pending.
    expect((await t.http('POST', v2.interrupt.callbackUrl, { headers: V2, body: { resumeValue: {} } })).body.error).toBe('interrupt_already_resolved');
  });

  it('a v2 token under a kid or alg the host does not hold is 401 interrupt_token_invalid at both majors; a v1-shaped forgery stays 404', async () => {
    const body = Buffer.from(JSON.stringify({ v: 1, runId: 'r', nodeId: 'n', interruptId: 'i', expiresAt: '2999-01-01T00:00:00.000Z', intent: 'resolve' })).toString('base64url');
    const mac = Buffer.alloc(32).toString('base64url');
    for (const token of [`ow2.hs256.nokid.${body}.${mac}`, `ow2.rs256.nokid.${body}.${mac}`, `ow2.hs256.${body}.${mac}`]) {
      const v1 = await t.http('GET', `/v1/interrupts/${token}`);
      const v2 = await t.http('GET', `/interrupts/${token}`, { headers: V2 });
      expect([v1.status, v1.body.error, v2.status, v2.body.error]).toEqual([401, 'interrupt_token_invalid', 401, 'interrupt_token_invalid']);
      expect((await t.http('POST', `/interrupts/${token}`, { headers: V2, body: { resumeValue: {} } })).status).toBe(401);
    }
    const forged = await t.http('GET', `/interrupts/${body}.${mac}`, { headers: V2 });
    expect([forged.status, forged.body.error]).toEqual([404, 'interrupt_not_found']);
  });
});
