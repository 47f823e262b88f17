/**
 * A third-party plugin on the run engine: a node executor shipped through the SDK extension point
 * that reports cost, a tool source whose tools declare cost and approval, and the RFC 0058
 * `maxCostUsd` bound they cross.
 */
import * as path from 'node:path';
import { createTestApp, TestApp } from '../support/test-app';
import { expectSchemaValid, installChains, runEvents, waitForStatus } from './run-kit';

const plugin = path.join(__dirname, '../fixtures/plugins/run-plugin.ts');

describe('runs: plugin executors, cost and tool approval', () => {
  let t: TestApp;
  let key: string;

  beforeAll(async () => {
    t = await createTestApp({ env: { OPENWOP_PLUGINS: plugin } });
    key = await t.key({ scopes: ['runs:create', 'runs:read', 'runs:cancel', 'tools:read'] });
    const costly = (id: string, usd: number, extra: Record<string, unknown> = {}) => ({ id, typeId: 'vendor.test.costly', config: { usd, ...extra } });
    await installChains(t, 'default', 'vendor.test.plugin-chains', {
      'vendor.test.costly3': { nodes: [costly('a', 0.4), costly('b', 0.4), costly('c', 0.4), { id: 'after', typeId: 'core.noop' }], edges: [{ from: 'a', to: 'b' }, { from: 'b', to: 'c' }, { from: 'c', to: 'after' }] },
      'vendor.test.usage': { nodes: [costly('spend', 0.5, { via: 'usage', holdMs: 10000 }), { id: 'after', typeId: 'core.noop' }], edges: [{ from: 'spend', to: 'after' }] },
      'vendor.test.paid': {
        nodes: [
          { id: 'p1', typeId: 'core.tool', config: { toolId: 'x-host-vendortest-paid', arguments: { usd: 0.3 } } },
          { id: 'p2', typeId: 'core.tool', config: { toolId: 'x-host-vendortest-paid', arguments: { usd: 0.3 } } },
        ],
        edges: [{ from: 'p1', to: 'p2' }],
      },
      'vendor.test.paid-fails': { nodes: [{ id: 'p', typeId: 'core.tool', config: { toolId: 'x-host-vendortest-paid', arguments: { usd: 0.7, fail: true } } }] },
      'vendor.test.guarded': {
        nodes: [
          { id: 'prep', typeId: 'core.noop', config: { note: 'hi {{inputs.who}}' } },
          { id: 'call', typeId: 'core.tool', config: { toolId: 'x-host-vendortest-guarded', arguments: { note: '{{nodes.prep.note}}' } } },
        ],
        edges: [{ from: 'prep', to: 'call' }],
      },
    });
  });

  afterAll(async () => {
    await t?.close();
  });

  it('sums the cost a plugin executor reports and fails the run cost_limit once it crosses maxCostUsd', async () => {
    const r = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.test.costly3', configurable: { maxCostUsd: 1 } } });
    expect(r.status).toBe(201);
    const done = await waitForStatus(t, key, r.body.runId, ['completed', 'failed']);
    expect([done.status, done.error?.code]).toEqual(['failed', 'cost_limit']);
    const events = await runEvents(t, key, r.body.runId);
    expectSchemaValid(events);
    // Two nodes stay under the bound; the third crosses it (1.2 > 1) and nothing runs after it.
    expect(events.filter((e) => e.type === 'node.completed').map((e) => e.payload.nodeId)).toEqual(['a', 'b', 'c']);
    const breach = events.find((e) => e.type === 'cap.breached')!;
    expect(breach.payload.kind).toBe('budget-cost');
    expect(breach.payload.limit).toBe(1);
    expect(breach.payload.observed as number).toBeCloseTo(1.2, 9);
    expect(breach.payload.nodeId).toBe('c');
    expect(events[events.length - 1].type).toBe('run.failed');
    expect(done.nodeStates.after.status).toBe('skipped');
    expect(done.metrics.openwopCost.usd).toBeCloseTo(1.2, 9);

    // The same chain under a larger bound completes and reports its cost.
    const ok = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.test.costly3', configurable: { maxCostUsd: 2 } } });
    const fine = await waitForStatus(t, key, ok.body.runId, ['completed', 'failed']);
    expect(fine.status).toBe('completed');
    expect(fine.metrics.openwopCost.usd).toBeCloseTo(1.2, 9);
    expect((await runEvents(t, key, ok.body.runId)).some((e) => e.type === 'cap.breached')).toBe(false);
  });

  it('counts a provider.usage cost at once: the node in flight is stopped by the breach', async () => {
    const started = Date.now();
    const r = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.test.usage', configurable: { maxCostUsd: 0.25 } } });
    const done = await waitForStatus(t, key, r.body.runId, ['completed', 'failed']);
    expect([done.status, done.error?.code]).toEqual(['failed', 'cost_limit']);
    expect(Date.now() - started).toBeLessThan(8000); // the node would hold 10 s
    const events = await runEvents(t, key, r.body.runId);
    expectSchemaValid(events);
    const types = events.map((e) => e.type);
    expect(types.indexOf('provider.usage')).toBeLessThan(types.indexOf('cap.breached'));
    expect(events.find((e) => e.type === 'cap.breached')!.payload).toMatchObject({ kind: 'budget-cost', limit: 0.25, observed: 0.5, nodeId: 'spend' });
    expect(events.find((e) => e.type === 'node.cancelled')!.payload).toMatchObject({ nodeId: 'spend', reason: 'cost_limit' });
    expect(done.nodeStates.after.status).toBe('skipped');
  });

  it('sums the cost core.tool calls declare (also of a failed call) against maxCostUsd', async () => {
    const r = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.test.paid', configurable: { maxCostUsd: 0.5 } } });
    const done = await waitForStatus(t, key, r.body.runId, ['completed', 'failed']);
    expect([done.status, done.error?.code]).toEqual(['failed', 'cost_limit']);
    const events = await runEvents(t, key, r.body.runId);
    expectSchemaValid(events);
    expect(events.filter((e) => e.type === 'agent.toolReturned')).toHaveLength(2);
    expect(events.find((e) => e.type === 'cap.breached')!.payload).toMatchObject({ kind: 'budget-cost', limit: 0.5, nodeId: 'p2' });
    expect(done.metrics.openwopCost.usd).toBeCloseTo(0.6, 9);

    const under = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.test.paid', configurable: { maxCostUsd: 0.7 } } });
    const fine = await waitForStatus(t, key, under.body.runId, ['completed', 'failed']);
    expect(fine.status).toBe('completed');
    expect(fine.outputs).toEqual({ p2: { paid: 0.3 } });

    const failing = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.test.paid-fails', configurable: { maxCostUsd: 0.5 } } });
    const f = await waitForStatus(t, key, failing.body.runId, ['completed', 'failed']);
    expect([f.status, f.error?.code]).toEqual(['failed', 'cost_limit']);
    expect(f.metrics.openwopCost.usd).toBeCloseTo(0.7, 9);
    expectSchemaValid(await runEvents(t, key, failing.body.runId));
  });

  it('gates a tool whose descriptor says approval "always": grant completes the call, deny fails approval_denied without calling it', async () => {
    const approver = await t.key({ principal: 'approver', scopes: ['approvals:respond', 'approvals:read', 'runs:read'] });
    const gateOf = async (runId: string) => {
      const snap = await waitForStatus(t, key, runId, ['waiting-approval']);
      expect(snap.currentNodeId).toBe('call');
      const events = await runEvents(t, key, runId);
      // Nothing was called while the gate is pending.
      expect(events.some((e) => e.type === 'agent.toolCalled')).toBe(false);
      return events.find((e) => e.type === 'node.suspended')!.payload.interruptId as string;
    };

    const granted = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.test.guarded', inputs: { who: 'ada' } } });
    const gate = await gateOf(granted.body.runId);
    const gateView = await t.http('GET', `/v1/approvals/${gate}`, { token: approver });
    expect(gateView.status).toBe(200);
    expect(gateView.body.state).toBe('pending');
    expect((await t.http('POST', `/v1/approvals/${gate}/grant`, { token: approver, body: {} })).status).toBeLessThan(300);
    const done = await waitForStatus(t, key, granted.body.runId, ['completed', 'failed']);
    expect(done.status).toBe('completed');
    expect(done.outputs).toEqual({ call: { done: true, echo: 'hi ada' } });
    const events = await runEvents(t, key, granted.body.runId);
    expectSchemaValid(events);
    const types = events.map((e) => e.type);
    expect(types.filter((x) => x === 'agent.toolCalled')).toHaveLength(1);
    expect(types.indexOf('node.resumed')).toBeLessThan(types.indexOf('agent.toolCalled'));
    expect(events.find((e) => e.type === 'node.resumed')!.payload.resumeValue).toEqual({ action: 'accept' });

    const denied = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.test.guarded', inputs: { who: 'bob' } } });
    const gate2 = await gateOf(denied.body.runId);
    expect((await t.http('POST', `/v1/approvals/${gate2}/deny`, { token: approver, body: { reason: 'no' } })).status).toBeLessThan(300);
    const failed = await waitForStatus(t, key, denied.body.runId, ['completed', 'failed']);
    expect([failed.status, failed.error.code]).toEqual(['failed', 'approval_denied']);
    const devents = await runEvents(t, key, denied.body.runId);
    expectSchemaValid(devents);
    expect(devents.some((e) => e.type === 'agent.toolCalled' || e.type === 'tool.session.opened')).toBe(false);
    expect(devents.find((e) => e.type === 'node.failed')!.payload).toMatchObject({ nodeId: 'call', error: { code: 'approval_denied' } });
  });
});
