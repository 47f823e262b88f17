/**
 * `core.subWorkflow` (node-packs.md §"`core.subWorkflow` contract"): child runs linked both ways,
 * inputMapping seeds and outputMapping harvest, child failure policies, the cancel cascade, a child's
 * interrupt read on its parent, tenant-bound children, and the install refusals of chain packs.
 */
import { runsGet, runsList } from '../../src/cli/runs.cli';
import { sink } from '../support/sink';
import { attestationOf } from '../../src/capabilities/runs/executors/subrun-attestation';
import { createTestApp, TestApp } from '../support/test-app';
import { chainPack, expectSchemaValid, installChains, runEvents, waitForStatus } from './run-kit';

const CHAINS: Record<string, Record<string, unknown>> = {
  'vendor.sw.child': {
    nodes: [{ id: 'set', typeId: 'core.setVariable', config: { variables: { result: 'done:{{inputs.tag}}', copy: 'yes' } } }],
  },
  'vendor.sw.parent': {
    nodes: [
      { id: 'before', typeId: 'core.setVariable', config: { variables: { prdId: 'prd-8', keep: 'parent-keep' } } },
      {
        id: 'call',
        typeId: 'core.subWorkflow',
        config: { workflowId: 'vendor.sw.child', inputs: { tag: 't1' }, inputMapping: { received: 'prdId', fromUnset: 'nothingHere' }, outputMapping: { outcome: 'result', keep: 'missingInChild' } },
      },
      { id: 'after', typeId: 'core.noop', config: { saw: '{{nodes.call.childStatus}}' } },
    ],
    edges: [{ from: 'before', to: 'call' }, { from: 'call', to: 'after' }],
  },
  'vendor.sw.failing-child': { nodes: [{ id: 'boom', typeId: 'core.fail', config: { code: 'child_broke', message: 'The child broke.' } }] },
  'vendor.sw.fail-parent': { nodes: [{ id: 'call', typeId: 'core.control.subWorkflow', config: { workflowId: 'vendor.sw.failing-child' } }] },
  'vendor.sw.absorb-parent': {
    nodes: [{ id: 'call', typeId: 'core.subWorkflow', config: { workflowId: 'vendor.sw.failing-child', onChildFailure: 'absorb' } }, { id: 'next', typeId: 'core.noop', config: {} }],
    edges: [{ from: 'call', to: 'next' }],
  },
  'vendor.sw.slow-child': { nodes: [{ id: 'wait', typeId: 'core.delay', config: { ms: 600_000 } }] },
  'vendor.sw.slow-parent': { nodes: [{ id: 'call', typeId: 'core.subWorkflow', config: { workflowId: 'vendor.sw.slow-child' } }] },
  'vendor.sw.attested-parent': {
    nodes: [{ id: 'call', typeId: 'core.subWorkflow', config: { workflowId: 'vendor.sw.child', inputs: { tag: 'a' }, outputMapping: { outcome: 'result' }, outputAttestation: { checksum: true, requireApproval: true } } }],
  },
  'vendor.sw.gated-child': { nodes: [{ id: 'gate', typeId: 'core.approval', config: { title: 'Child gate', requiredApprovals: 1 } }] },
  'vendor.sw.gated-parent': {
    nodes: [{ id: 'call', typeId: 'core.subWorkflow', config: { workflowId: 'vendor.sw.gated-child' } }, { id: 'end', typeId: 'core.noop', config: {} }],
    edges: [{ from: 'call', to: 'end' }],
  },
};

async function childOf(t: TestApp, token: string, parentRunId: string): Promise<{ runId: string; status: string; parentNodeId?: string }> {
  const until = Date.now() + 15_000;
  for (;;) {
    const r = await t.http('GET', `/v1/runs/${parentRunId}`, { token });
    const c = (r.body.childRuns ?? [])[0];
    if (c) return c;
    if (Date.now() > until) throw new Error(`no child run of ${parentRunId}: ${JSON.stringify(r.body)}`);
    await new Promise((res) => setTimeout(res, 50));
  }
}

describe('runs: core.subWorkflow child runs', () => {
  let t: TestApp;
  let key: string;
  let other: string;

  beforeAll(async () => {
    t = await createTestApp();
    key = await t.key({ scopes: ['runs:create', 'runs:read', 'runs:cancel', 'approvals:respond'] });
    other = await t.key({ tenant: 'other', scopes: ['runs:create', 'runs:read', 'runs:cancel'] });
    await installChains(t, 'default', 'vendor.test.subworkflows', CHAINS);
  });

  afterAll(async () => {
    await t?.close();
  });

  it('links parent and child both ways, seeds the child through inputMapping and harvests through outputMapping', async () => {
    const r = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.sw.parent' } });
    expect(r.status).toBe(201);
    const parent = await waitForStatus(t, key, r.body.runId, ['completed', 'failed']);
    expect(parent.status).toBe('completed');
    // Written by `before`, then the harvested child variable; `keep` untouched (the child has no such variable).
    expect(parent.variables).toEqual({ prdId: 'prd-8', keep: 'parent-keep', outcome: 'done:t1', inputs: {} });
    expect(parent.childRuns).toHaveLength(1);
    const [c] = parent.childRuns;
    expect(c).toMatchObject({ workflowId: 'vendor.sw.child', status: 'completed', parentNodeId: 'call' });

    const events = await runEvents(t, key, r.body.runId);
    expectSchemaValid(events);
    const done = events.find((e) => e.type === 'node.completed' && e.nodeId === 'call')!;
    expect(done.payload.outputs).toMatchObject({ childRunId: c.runId, childStatus: 'completed', variables: { outcome: 'done:t1' } });
    expect(parent.outputs).toEqual({ after: { saw: 'completed' } });

    const child = (await t.http('GET', `/v1/runs/${c.runId}`, { token: key })).body;
    expect(child).toMatchObject({ status: 'completed', parentRunId: r.body.runId, parentNodeId: 'call' });
    expect(child.childRuns).toBeUndefined();
    // The seed is the parent's variable when the child was started; an unset parent variable seeds nothing (never null).
    expect(child.variables).toEqual({ received: 'prd-8', result: 'done:t1', copy: 'yes', inputs: { tag: 't1' } });
    expectSchemaValid(await runEvents(t, key, c.runId));
  });

  it('a failed child fails the parent with its error (fail-parent), or is absorbed (absorb)', async () => {
    const failed = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.sw.fail-parent' } });
    const f = await waitForStatus(t, key, failed.body.runId, ['completed', 'failed']);
    expect([f.status, f.error?.code]).toEqual(['failed', 'child_broke']);
    expect(f.childRuns[0].status).toBe('failed');

    const absorbed = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.sw.absorb-parent' } });
    const a = await waitForStatus(t, key, absorbed.body.runId, ['completed', 'failed']);
    expect(a.status).toBe('completed');
    const call = (await runEvents(t, key, absorbed.body.runId)).find((e) => e.type === 'node.completed' && e.nodeId === 'call')!;
    expect(call.payload.outputs).toMatchObject({ childStatus: 'failed', childError: { code: 'child_broke' } });
  });

  it('outputAttestation: a checksum of the child outputs, and nothing merged before the approval is granted (RFC 0063)', async () => {
    for (const action of ['accept', 'reject'] as const) {
      const r = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.sw.attested-parent' } });
      const waiting = await waitForStatus(t, key, r.body.runId, ['waiting-approval', 'completed', 'failed']);
      expect(waiting.status).toBe('waiting-approval');
      // The child completed; its outputs are not the parent's yet.
      expect(waiting.childRuns[0].status).toBe('completed');
      expect(waiting.variables).toEqual({ inputs: {} });
      expect((await t.http('POST', `/v1/runs/${r.body.runId}/interrupts/call`, { token: key, body: { resumeValue: { action } } })).status).toBeLessThan(300);
      const done = await waitForStatus(t, key, r.body.runId, ['completed', 'failed']);
      expect(done.status).toBe('completed');
      const call = (await runEvents(t, key, r.body.runId)).find((e) => e.type === 'node.completed' && e.nodeId === 'call')!;
      const child = (await t.http('GET', `/v1/runs/${done.childRuns[0].runId}`, { token: key })).body;
      expect(call.payload.outputs).toMatchObject({ childStatus: 'completed', attestation: attestationOf(child.outputs), merged: action === 'accept' });
      expect(done.variables).toEqual(action === 'accept' ? { outcome: 'done:a', inputs: {} } : { inputs: {} });
      // One child only: the node executed again after the gate found the same child.
      expect(done.childRuns).toHaveLength(1);
    }
  });

  it('cancelling the parent cancels its child in flight', async () => {
    const r = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.sw.slow-parent' } });
    const c = await childOf(t, key, r.body.runId);
    await waitForStatus(t, key, c.runId, ['running']);
    expect((await t.http('POST', `/v1/runs/${r.body.runId}/cancel`, { token: key })).status).toBe(200);
    expect((await waitForStatus(t, key, r.body.runId, ['cancelled', 'completed', 'failed'])).status).toBe('cancelled');
    expect((await waitForStatus(t, key, c.runId, ['cancelled', 'completed', 'failed'])).status).toBe('cancelled');
    const childEvents = await runEvents(t, key, c.runId);
    expectSchemaValid(childEvents);
    expect(childEvents.at(-1)!.type).toBe('run.cancelled');
  });

  it('a child waiting on a person makes its parent read waiting; resolving the child completes both', async () => {
    const r = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.sw.gated-parent' } });
    const c = await childOf(t, key, r.body.runId);
    await waitForStatus(t, key, c.runId, ['waiting-approval']);
    const parent = await waitForStatus(t, key, r.body.runId, ['waiting-approval']);
    expect(parent.childRuns[0]).toMatchObject({ runId: c.runId, status: 'waiting-approval' });
    const resolved = await t.http('POST', `/v1/runs/${c.runId}/interrupts/gate`, { token: key, body: { resumeValue: { action: 'accept' } } });
    expect(resolved.status).toBeLessThan(300);
    expect((await waitForStatus(t, key, c.runId, ['completed', 'failed'])).status).toBe('completed');
    const done = await waitForStatus(t, key, r.body.runId, ['completed', 'failed']);
    expect(done.status).toBe('completed');
    expect(done.childRuns).toEqual([expect.objectContaining({ runId: c.runId, status: 'completed' })]);
  });

  it('cancelling a parent whose child waits on a person cancels the child (parent-cancelled) and closes its gate', async () => {
    const r = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.sw.gated-parent' } });
    const c = await childOf(t, key, r.body.runId);
    await waitForStatus(t, key, r.body.runId, ['waiting-approval']);
    expect((await t.http('POST', `/v1/runs/${r.body.runId}/cancel`, { token: key, body: { reason: 'cascade-test' } })).status).toBe(200);
    expect((await waitForStatus(t, key, r.body.runId, ['cancelled', 'completed', 'failed'])).status).toBe('cancelled');
    expect((await waitForStatus(t, key, c.runId, ['cancelled', 'completed', 'failed'])).status).toBe('cancelled');
    const cancelled = (await runEvents(t, key, c.runId)).find((e) => e.type === 'run.cancelled')!;
    expect(cancelled.payload.reason).toBe('parent-cancelled');
    const late = await t.http('POST', `/v1/runs/${c.runId}/interrupts/gate`, { token: key, body: { resumeValue: { action: 'accept' } } });
    expect([404, 409, 410]).toContain(late.status);
  });

  it('keeps children in their tenant: another tenant neither sees them nor can start the child chain', async () => {
    const r = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.sw.parent' } });
    const parent = await waitForStatus(t, key, r.body.runId, ['completed']);
    const childId = parent.childRuns[0].runId;
    for (const id of [r.body.runId, childId]) {
      const got = await t.http('GET', `/v1/runs/${id}`, { token: other });
      expect([got.status, got.body.error]).toEqual([404, 'not_found']);
    }
    expect((await t.http('POST', '/v1/runs', { token: other, body: { workflowId: 'vendor.sw.parent' } })).status).toBe(404);
  });

  it('refuses at install, with the JSON path, a chain with an unknown node type, a missing tool or a missing child workflow', async () => {
    const publisher = await t.key({ scopes: ['packs:publish', 'runs:read'] });
    const install = (pack: Record<string, unknown>) => t.http('POST', '/v1/installed-packs', { token: publisher, body: pack });
    const refused = async (dag: Record<string, unknown>) => {
      const r = await install(chainPack('vendor.test.sw-bad', { 'vendor.sw.bad-chain': dag }));
      return { status: r.status, code: r.body.error, details: r.body.details as { problems: Array<{ path: string; code: string }> } };
    };
    const unknownType = await refused({ nodes: [{ id: 'x', typeId: 'vendor.nobody.serves-this', config: {} }] });
    expect([unknownType.status, unknownType.details.problems]).toEqual([422, [expect.objectContaining({ path: '/chains/0/dag/nodes/0/typeId', code: 'unknown_node_type' })]]);
    const missingTool = await refused({ nodes: [{ id: 'x', typeId: 'core.tool', config: { toolId: 'mcp:nowhere.tool' } }] });
    expect(missingTool.details.problems).toEqual([expect.objectContaining({ path: '/chains/0/dag/nodes/0/config/toolId', code: 'unknown_tool' })]);
    const missingChild = await refused({ nodes: [{ id: 'a', typeId: 'core.noop', config: {} }, { id: 'x', typeId: 'core.subWorkflow', config: { workflowId: 'vendor.sw.not-installed' } }] });
    expect(missingChild.details.problems).toEqual([expect.objectContaining({ path: '/chains/0/dag/nodes/1/config/workflowId', code: 'unknown_child_workflow' })]);
    // Nothing of them was installed.
    expect((await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.sw.bad-chain' } })).status).toBe(404);
    // A child chain of the same pack, or one installed before, is fine.
    const pair = await install(chainPack('vendor.test.sw-pair', { 'vendor.sw.pair-parent': { nodes: [{ id: 'x', typeId: 'core.subWorkflow', config: { workflowId: 'vendor.sw.pair-child' } }, { id: 'y', typeId: 'core.subWorkflow', config: { workflowId: 'vendor.sw.child' } }] }, 'vendor.sw.pair-child': { nodes: [{ id: 'n', typeId: 'core.noop', config: {} }] } }));
    expect(pair.status).toBe(201);
  });

  it('the CLI shows a run\'s parent and its children (runs get, runs list)', async () => {
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const addr = t.app.getHttpServer().address();
    const url = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
    const r = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.sw.parent' } });
    const parent = await waitForStatus(t, key, r.body.runId, ['completed']);
    const childId = parent.childRuns[0].runId as string;
    const out = sink();
    expect(await runsGet({ url, key, out, err: sink() }, r.body.runId, {})).toBe(0);
    expect(out.text()).toContain(`${r.body.runId}  completed`);
    expect(out.text()).toMatch(new RegExp(`child {3}${childId} {2}completed +vendor\\.sw\\.child \\(node call\\)`));
    const childOut = sink();
    expect(await runsGet({ url, key, out: childOut, err: sink() }, childId, {})).toBe(0);
    expect(childOut.text()).toContain(`parent  ${r.body.runId} (node call)`);
    const list = sink();
    expect(await runsList({ url, key, out: list, err: sink() }, { limit: 50 })).toBe(0);
    expect(list.text().split('\n').find((l) => l.startsWith(childId))).toContain(`child of ${r.body.runId}`);
  });
});
