/**
 * Approval quorums count distinct authenticated principals. A vote for someone else (acting-as) is a
 * separate, designated permission: the `approvals:act-as` scope, or the scope a gate's
 * `namedVoters.recordedBy` names. Named voters are compared canonically (NFKC, trimmed, case-folded),
 * in one namespace with the principals that vote for themselves. `allowSelfApproval: false` keeps
 * the run's creator from approving. The approvals inbox follows the same rules as the run routes.
 */
import { createTestApp, TestApp } from '../support/test-app';
import { installChains, waitForStatus } from './run-kit';

const GATE = { title: 'Quorum', requiredApprovals: 3, rejectionPolicy: 'majority' };
const CHAINS = {
  'vendor.test.q.default': { nodes: [{ id: 'gate', typeId: 'core.approval', config: GATE }] },
  'vendor.test.q.panel': { nodes: [{ id: 'gate', typeId: 'core.approval', config: { ...GATE, namedVoters: { recordedBy: 'approvals:respond' } } }] },
  'vendor.test.q.four-eyes': { nodes: [{ id: 'gate', typeId: 'core.approval', config: { title: 'Four eyes', requiredApprovals: 2, allowSelfApproval: false } }] },
  'vendor.test.q.bad-self': { nodes: [{ id: 'gate', typeId: 'core.approval', config: { allowSelfApproval: 'no' } }] },
  'vendor.test.q.bad-named': { nodes: [{ id: 'gate', typeId: 'core.approval', config: { namedVoters: { recordedBy: 'not a scope' } } }] },
  'vendor.test.q.bad-named-key': { nodes: [{ id: 'gate', typeId: 'core.approval', config: { namedVoters: { recordedBy: 'approvals:respond', extra: 1 } } }] },
};
const RESPOND = ['runs:create', 'runs:read', 'runs:cancel', 'approvals:respond'];

describe('runs: approval quorum and acting-as', () => {
  let t: TestApp;
  const keys: Record<string, string> = {};

  const start = async (workflowId: string, token = keys.owner): Promise<string> => {
    const r = await t.http('POST', '/v1/runs', { token, body: { workflowId } });
    expect([workflowId, r.status]).toEqual([workflowId, 201]);
    await waitForStatus(t, token, r.body.runId, ['waiting-approval']);
    return r.body.runId as string;
  };
  const vote = (runId: string, token: string, action: 'accept' | 'reject', voter?: string) =>
    t.http('POST', `/v1/runs/${runId}/interrupts/gate`, { token, body: { resumeValue: { action, ...(voter === undefined ? {} : { voter }) } } });
  const answer = (r: { status: number; body: { error?: string; interruptState?: string } }) => [r.status, r.body.error ?? r.body.interruptState];
  const decisions = async (runId: string) =>
    (await t.ds.query(
      `SELECT d."principal", d."voter_key", d."submitted_by", d."decision" FROM "approval_decision" d JOIN "approval" a ON a."id" = d."approval_id" WHERE a."run_id" = $1 ORDER BY d."created_at", d."id"`,
      [runId],
    )) as Array<{ principal: string; voter_key: string; submitted_by: string; decision: string }>;
  const runStatus = async (runId: string) => (await t.http('GET', `/v1/runs/${runId}`, { token: keys.owner })).body.status as string;

  beforeAll(async () => {
    t = await createTestApp({ env: { OPENWOP_TEST_SEAMS: 'true' } });
    for (const principal of ['owner', 'mallory', 'alice', 'bob', 'carol']) keys[principal] = await t.key({ principal, scopes: RESPOND });
    keys.clerk = await t.key({ principal: 'clerk', scopes: [...RESPOND, 'approvals:act-as'] });
    // Exactly the conformance suite's bearer: approvals:respond and no other approval scope.
    keys.suite = await t.key({ principal: 'conformance', scopes: ['runs:read', 'runs:create', 'runs:cancel', 'approvals:respond', 'tools:read', 'proposals:read', 'goals:read'] });
    await installChains(t, 'default', 'vendor.test.quorum-voters', CHAINS);
  });

  afterAll(async () => {
    await t?.close();
  });

  it('does not let one key release a quorum of three by voting as alice, ALICE and bob (the finding)', async () => {
    const runId = await start('vendor.test.q.default');
    for (const voter of ['alice', 'ALICE', 'bob']) {
      const r = await vote(runId, keys.mallory, 'accept', voter);
      expect([voter, ...answer(r)]).toEqual([voter, 403, 'forbidden']);
      expect(r.body.message).toMatch(/approvals:act-as/);
      expect(r.body.details).toMatchObject({ field: 'voter', requiredScopes: ['approvals:act-as'] });
    }
    expect(await decisions(runId)).toEqual([]);
    expect(await runStatus(runId)).toBe('waiting-approval');
    // Its own vote counts once, however it spells itself.
    expect(answer(await vote(runId, keys.mallory, 'accept'))).toEqual([200, 'pending']);
    expect(answer(await vote(runId, keys.mallory, 'accept', ' MALLORY '))).toEqual([409, 'approval_already_decided']);
    // bob's own vote is not taken by anyone: it counts.
    expect(answer(await vote(runId, keys.bob, 'accept'))).toEqual([200, 'pending']);
    expect(await runStatus(runId)).toBe('waiting-approval');
    expect(answer(await vote(runId, keys.alice, 'accept'))).toEqual([200, 'resolved']);
    expect((await waitForStatus(t, keys.owner, runId, ['completed', 'failed'])).status).toBe('completed');
    expect(await decisions(runId)).toEqual([
      { principal: 'mallory', voter_key: 'mallory', submitted_by: 'mallory', decision: 'granted' },
      { principal: 'bob', voter_key: 'bob', submitted_by: 'bob', decision: 'granted' },
      { principal: 'alice', voter_key: 'alice', submitted_by: 'alice', decision: 'granted' },
    ]);
  });

  it('with approvals:act-as, compares named voters canonically in one namespace with the principals voting for themselves', async () => {
    const runId = await start('vendor.test.q.default');
    expect(answer(await vote(runId, keys.clerk, 'accept', 'alice'))).toEqual([200, 'pending']);
    for (const same of ['ALICE', ' Alice ', 'Ａｌｉｃｅ']) {
      const r = await vote(runId, keys.clerk, 'accept', same);
      expect([same, ...answer(r)]).toEqual([same, 409, 'approval_already_decided']);
    }
    // alice's own vote was recorded by the clerk: she is the same voter.
    expect(answer(await vote(runId, keys.alice, 'accept'))).toEqual([409, 'approval_already_decided']);
    // bob voted for himself first: the clerk cannot count him again.
    expect(answer(await vote(runId, keys.bob, 'accept'))).toEqual([200, 'pending']);
    expect(answer(await vote(runId, keys.clerk, 'accept', 'BOB'))).toEqual([409, 'approval_already_decided']);
    // Naming itself is not acting-as: the clerk's own vote, once.
    expect(answer(await vote(runId, keys.clerk, 'accept', 'Clerk'))).toEqual([200, 'resolved']);
    expect((await waitForStatus(t, keys.owner, runId, ['completed', 'failed'])).status).toBe('completed');
    expect(await decisions(runId)).toEqual([
      { principal: 'alice', voter_key: 'alice', submitted_by: 'clerk', decision: 'granted' },
      { principal: 'bob', voter_key: 'bob', submitted_by: 'bob', decision: 'granted' },
      { principal: 'clerk', voter_key: 'clerk', submitted_by: 'clerk', decision: 'granted' },
    ]);
    const gate = await t.http('GET', `/v1/approvals/${(await t.ds.query(`SELECT "id" FROM "approval" WHERE "run_id" = $1`, [runId]))[0].id}`, { token: keys.owner });
    expect(gate.body.decisions.map((d: { principal: string; submittedBy?: string }) => [d.principal, d.submittedBy])).toEqual([
      ['alice', 'clerk'],
      ['bob', undefined],
      ['clerk', undefined],
    ]);
    // The audit entry names who cast the vote beside the voter it counts for.
    const audit = (await t.ds.query(`SELECT "entry" FROM "audit_entry" WHERE "action" = 'approval.decided' AND "entry"->'details'->>'runId' = $1 ORDER BY "seq"`, [runId])) as Array<{
      entry: { actor: { principal: string }; details: Record<string, unknown> };
    }>;
    expect(audit.map((a) => [a.entry.actor.principal, a.entry.details.voter, a.entry.details.castBy, a.entry.details.actingAs])).toEqual([
      ['clerk', 'alice', 'clerk', true],
      ['bob', 'bob', 'bob', false],
      ['clerk', 'clerk', 'clerk', false],
    ]);
  });

  it('lets a gate designate who records named votes: the conformance pattern completes on the third distinct voter', async () => {
    const runId = await start('vendor.test.q.panel', keys.suite);
    for (const voter of ['approver-1', 'approver-2']) expect(answer(await vote(runId, keys.suite, 'accept', voter))).toEqual([200, 'pending']);
    expect(answer(await vote(runId, keys.suite, 'accept', 'APPROVER-2'))).toEqual([409, 'approval_already_decided']);
    expect(await runStatus(runId)).toBe('waiting-approval');
    expect(answer(await vote(runId, keys.suite, 'accept', 'approver-3'))).toEqual([200, 'resolved']);
    expect((await waitForStatus(t, keys.owner, runId, ['completed', 'failed'])).status).toBe('completed');
    // A gate without the designation refuses the same votes from the same key.
    const plain = await start('vendor.test.q.default', keys.suite);
    expect(answer(await vote(plain, keys.suite, 'accept', 'approver-1'))).toEqual([403, 'forbidden']);
  });

  it('keeps the seeded conformance-interrupt-quorum fixture resolvable by one designated recorder', async () => {
    const runId = await start('conformance-interrupt-quorum', keys.suite);
    for (const voter of ['approver-1', 'approver-2']) expect(answer(await vote(runId, keys.suite, 'accept', voter))).toEqual([200, 'pending']);
    expect(answer(await vote(runId, keys.suite, 'accept', 'approver-3'))).toEqual([200, 'resolved']);
    expect((await waitForStatus(t, keys.suite, runId, ['completed', 'failed'])).status).toBe('completed');
    const rejected = await start('conformance-interrupt-quorum', keys.suite);
    expect(answer(await vote(rejected, keys.suite, 'reject', 'approver-1'))).toEqual([200, 'pending']);
    expect(answer(await vote(rejected, keys.suite, 'reject', 'approver-2'))).toEqual([200, 'rejected']);
    expect((await waitForStatus(t, keys.suite, rejected, ['completed', 'failed'])).status).toBe('failed');
  });

  it('refuses a named voter that is empty once canonical, 400', async () => {
    const runId = await start('vendor.test.q.panel');
    const r = await vote(runId, keys.clerk, 'accept', ' \u00a0 ');
    expect([...answer(r), r.body.details?.field]).toEqual([400, 'validation_error', 'resumeValue.voter']);
    await t.http('POST', `/v1/runs/${runId}/cancel`, { token: keys.owner, body: {} });
  });

  it('with allowSelfApproval: false, the run creator cannot approve, directly, as a named voter or as the recorder', async () => {
    const runId = await start('vendor.test.q.four-eyes');
    const own = await vote(runId, keys.owner, 'accept');
    expect(answer(own)).toEqual([403, 'forbidden']);
    expect(own.body.details).toMatchObject({ selfApproval: false });
    expect(answer(await vote(runId, keys.clerk, 'accept', 'OWNER'))).toEqual([403, 'forbidden']);
    const asClerk = await t.key({ principal: 'owner', scopes: [...RESPOND, 'approvals:act-as'] });
    expect(answer(await vote(runId, asClerk, 'accept', 'dave'))).toEqual([403, 'forbidden']);
    // The inbox follows the same rule.
    const [{ id }] = (await t.ds.query(`SELECT "id" FROM "approval" WHERE "run_id" = $1`, [runId])) as Array<{ id: string }>;
    const inbox = await t.http('POST', `/v1/approvals/${id}/grant`, { token: keys.owner, body: {} });
    expect(answer(inbox)).toEqual([403, 'forbidden']);
    expect(await decisions(runId)).toEqual([]);
    // Others approve.
    expect(answer(await vote(runId, keys.alice, 'accept'))).toEqual([200, 'pending']);
    expect((await t.http('POST', `/v1/approvals/${id}/grant`, { token: keys.bob, body: {} })).body.state).toBe('granted');
    expect((await waitForStatus(t, keys.owner, runId, ['completed', 'failed'])).status).toBe('completed');
  });

  it('applies the same voter rules to the approvals inbox as to the run route', async () => {
    const runId = await start('vendor.test.q.default');
    const [{ id }] = (await t.ds.query(`SELECT "id" FROM "approval" WHERE "run_id" = $1`, [runId])) as Array<{ id: string }>;
    expect(answer(await vote(runId, keys.carol, 'accept'))).toEqual([200, 'pending']);
    const again = await t.http('POST', `/v1/approvals/${id}/grant`, { token: keys.carol, body: {} });
    expect(answer(again)).toEqual([409, 'approval_already_decided']);
    // The clerk recorded dave; dave's own inbox grant is the same voter.
    expect(answer(await vote(runId, keys.clerk, 'accept', 'Dave'))).toEqual([200, 'pending']);
    const dave = await t.key({ principal: 'dave', scopes: RESPOND });
    expect(answer(await t.http('POST', `/v1/approvals/${id}/grant`, { token: dave, body: {} }))).toEqual([409, 'approval_already_decided']);
    expect(answer(await t.http('POST', `/v1/approvals/${id}/resolve`, { token: keys.mallory, body: { resumeValue: { action: 'accept', voter: 'erin' } } }))).toEqual([403, 'forbidden']);
    expect(await runStatus(runId)).toBe('waiting-approval');
    await t.http('POST', `/v1/runs/${runId}/cancel`, { token: keys.owner, body: {} });
  });

  it('refuses a malformed allowSelfApproval or namedVoters at run creation, 422', async () => {
    for (const workflowId of ['vendor.test.q.bad-self', 'vendor.test.q.bad-named', 'vendor.test.q.bad-named-key']) {
      const r = await t.http('POST', '/v1/runs', { token: keys.owner, body: { workflowId } });
      expect([workflowId, r.status, r.body.error]).toEqual([workflowId, 422, 'workflow_invalid']);
      expect(r.body.details.problems.join(' ')).toMatch(workflowId.endsWith('self') ? /allowSelfApproval/ : /namedVoters/);
    }
  });
});

describe('approvals: the operator-wide no-self-approval default', () => {
  let t: TestApp;

  afterAll(async () => {
    await t?.close();
  });

  it('keeps the creator of a gated run from approving it unless the gate allows it', async () => {
    t = await createTestApp({ configFile: { proposals: { approval: { allowSelfApproval: false } } } });
    const owner = await t.key({ principal: 'owner', scopes: RESPOND });
    const other = await t.key({ principal: 'other', scopes: RESPOND });
    await installChains(t, 'default', 'vendor.test.quorum-default', {
      'vendor.test.q.one': { nodes: [{ id: 'gate', typeId: 'core.approval', config: { requiredApprovals: 1 } }] },
      'vendor.test.q.self-ok': { nodes: [{ id: 'gate', typeId: 'core.approval', config: { requiredApprovals: 1, allowSelfApproval: true } }] },
    });
    const run = async (workflowId: string) => {
      const r = await t.http('POST', '/v1/runs', { token: owner, body: { workflowId } });
      await waitForStatus(t, owner, r.body.runId, ['waiting-approval']);
      return r.body.runId as string;
    };
    const gated = await run('vendor.test.q.one');
    const own = await t.http('POST', `/v1/runs/${gated}/interrupts/gate`, { token: owner, body: { resumeValue: { action: 'accept' } } });
    expect([own.status, own.body.error]).toEqual([403, 'forbidden']);
    const item = await t.http('GET', `/v1/approvals?state=pending`, { token: owner });
    expect(item.body.approvals[0]).toMatchObject({ allowSelfApproval: false, namedVotersRecordedBy: null, requestedBy: 'owner' });
    expect((await t.http('POST', `/v1/runs/${gated}/interrupts/gate`, { token: other, body: { resumeValue: { action: 'accept' } } })).status).toBe(200);
    // A gate that allows it says so itself.
    const allowed = await run('vendor.test.q.self-ok');
    expect((await t.http('POST', `/v1/runs/${allowed}/interrupts/gate`, { token: owner, body: { resumeValue: { action: 'accept' } } })).status).toBe(200);
    // A rejection by the creator is not an approval: it is taken.
    const denied = await run('vendor.test.q.one');
    const reject = await t.http('POST', `/v1/runs/${denied}/interrupts/gate`, { token: owner, body: { resumeValue: { action: 'reject' } } });
    expect([reject.status, reject.body.interruptState]).toEqual([200, 'rejected']);
  });
});
