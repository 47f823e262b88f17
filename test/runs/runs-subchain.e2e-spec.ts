/** A `workflow:` tool called from a chain: a child run whose outputs flow back, cancelled with its parent, tenant-scoped. */
import { createTestApp, TestApp } from '../support/test-app';
import { expectSchemaValid, installChains, runEvents, waitForStatus } from './run-kit';

describe('runs: workflow tools as child runs', () => {
  let t: TestApp;
  let key: string;
  let other: string;

  const childRuns = async (token: string, workflowId: string) =>
    ((await t.http('GET', '/v1/runs?limit=100', { token })).body.runs as Array<{ runId: string; workflowId: string; status: string }>).filter((r) => r.workflowId === workflowId);

  beforeAll(async () => {
    t = await createTestApp();
    key = await t.key({ scopes: ['runs:create', 'runs:read', 'runs:cancel', 'tools:read'] });
    other = await t.key({ tenant: 'other', scopes: ['runs:create', 'runs:read', 'runs:cancel', 'tools:read'] });
    await installChains(t, 'default', 'vendor.test.sub', {
      'vendor.test.child': {
        nodes: [{ id: 'c1', typeId: 'core.noop', config: { got: '{{inputs.x}}', tag: 'child' } }, { id: 'c2', typeId: 'core.noop', config: { doubled: '{{nodes.c1.got}}' } }],
        edges: [{ from: 'c1', to: 'c2' }],
      },
      'vendor.test.parent': {
        nodes: [
          { id: 'call', typeId: 'core.tool', config: { toolId: 'workflow:vendor.test.child', arguments: { x: '{{inputs.x}}' } } },
          { id: 'after', typeId: 'core.noop', config: { fromChild: '{{nodes.call.c2.doubled}}' } },
        ],
        edges: [{ from: 'call', to: 'after' }],
      },
      'vendor.test.slow-child': { nodes: [{ id: 'wait', typeId: 'core.delay', config: { ms: 20000 } }] },
      'vendor.test.slow-parent': { nodes: [{ id: 'call', typeId: 'core.tool', config: { toolId: 'workflow:vendor.test.slow-child' } }] },
    });
    // The other tenant has a caller of the same tool id but not the chain it names.
    await installChains(t, 'other', 'vendor.test.other', {
      'vendor.test.caller': { nodes: [{ id: 'call', typeId: 'core.tool', config: { toolId: 'workflow:vendor.test.child', arguments: { x: 1 } } }] },
    });
  });

  afterAll(async () => {
    await t?.close();
  });

  it('runs the chain as a child run of the same principal and passes its outputs back', async () => {
    const r = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.test.parent', inputs: { x: 21 } } });
    const done = await waitForStatus(t, key, r.body.runId, ['completed', 'failed']);
    expect(done.status).toBe('completed');
    expect(done.outputs).toEqual({ after: { fromChild: 21 } });
    const events = await runEvents(t, key, r.body.runId);
    expectSchemaValid(events);
    expect(events.find((e) => e.type === 'node.completed' && e.payload.nodeId === 'call')!.payload.outputs).toEqual({ c2: { doubled: 21 } });
    expect(events.find((e) => e.type === 'agent.toolCalled')!.payload).toMatchObject({ toolName: 'workflow:vendor.test.child', transport: 'native' });

    const children = await childRuns(key, 'vendor.test.child');
    expect(children).toHaveLength(1);
    const child = await waitForStatus(t, key, children[0].runId, ['completed']);
    expect(child.owner).toEqual({ tenant: 'default', principal: 'tester' });
    expect(child.variables.inputs).toEqual({ x: 21 });
    expect(child.outputs).toEqual({ c2: { doubled: 21 } });
    const [row] = await t.ds.query(`SELECT "metadata" ->> 'parentRunId' AS parent FROM "run" WHERE "id" = $1`, [children[0].runId]);
    expect(row.parent).toBe(r.body.runId);
    expectSchemaValid(await runEvents(t, key, children[0].runId));
  });

  it('cancelling the parent cancels the child run in flight', async () => {
    const r = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.test.slow-parent' } });
    let child: { runId: string } | undefined;
    for (let i = 0; i < 200 && !child; i++) {
      child = (await childRuns(key, 'vendor.test.slow-child'))[0];
      if (!child) await new Promise((res) => setTimeout(res, 25));
    }
    expect(child).toBeDefined();
    await waitForStatus(t, key, child!.runId, ['running']);
    const started = Date.now();
    expect((await t.http('POST', `/v1/runs/${r.body.runId}/cancel`, { token: key })).status).toBe(200);
    const parent = await waitForStatus(t, key, r.body.runId, ['cancelled', 'completed', 'failed']);
    expect(parent.status).toBe('cancelled');
    const c = await waitForStatus(t, key, child!.runId, ['cancelled', 'completed', 'failed']);
    expect(c.status).toBe('cancelled');
    expect(Date.now() - started).toBeLessThan(8000);
    const childEvents = await runEvents(t, key, child!.runId);
    expectSchemaValid(childEvents);
    expect(childEvents[childEvents.length - 1].type).toBe('run.cancelled');
    expect(childEvents.some((e) => e.type === 'node.cancelled' && e.payload.nodeId === 'wait')).toBe(true);
    const parentEvents = await runEvents(t, key, r.body.runId);
    expectSchemaValid(parentEvents);
    expect(parentEvents.find((e) => e.type === 'tool.session.closed')!.payload.outcome).toBe('cancelled');
  });

  it('keeps tenants apart: another tenant cannot call the chain as a tool nor see its child runs', async () => {
    const r = await t.http('POST', '/v1/runs', { token: other, body: { workflowId: 'vendor.test.caller' } });
    expect(r.status).toBe(201);
    const done = await waitForStatus(t, other, r.body.runId, ['completed', 'failed']);
    expect([done.status, done.error?.code]).toEqual(['failed', 'tool_not_found']);
    // No child run was created for either tenant by that attempt.
    expect(await childRuns(other, 'vendor.test.child')).toEqual([]);
    expect(await childRuns(key, 'vendor.test.child')).toHaveLength(1);
    // The default tenant's child runs are 404 for the other tenant, like unknown ones.
    for (const c of await childRuns(key, 'vendor.test.child')) {
      const got = await t.http('GET', `/v1/runs/${c.runId}`, { token: other });
      expect([got.status, got.body.error]).toEqual([404, 'not_found']);
      expect((await t.http('GET', `/v1/runs/${c.runId}/events/poll?lastSequence=0`, { token: other })).status).toBe(404);
    }
    // Nor can it start the chain directly.
    const direct = await t.http('POST', '/v1/runs', { token: other, body: { workflowId: 'vendor.test.child' } });
    expect(direct.status).toBe(404);
  });
});
