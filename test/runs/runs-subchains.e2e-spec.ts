/**
 * RFC 0133 sub-chains through the ordinary install and run paths: a chain's `config.subChainRef` runs the referenced
 * chain as a child run under its tenant-scoped id `wfc_<tenant>__<chainId>__<version>` (one per tenant, shared by
 * every parent), another tenant never reaches it, and install refuses unresolved, cyclic and too-deep composition.
 */
import { createTestApp, TestApp } from '../support/test-app';
import { waitForStatus } from './run-kit';

const CHILD_ID = 'wfc_default__vendor_test_child__1_0_0';

function pack(name: string, chains: Array<{ chainId: string; subChains?: unknown[]; nodes: unknown[]; edges?: unknown[] }>): Record<string, unknown> {
  return {
    name,
    version: '1.0.0',
    kind: 'workflow-chain',
    engines: { openwop: '^1.0.0' },
    chains: chains.map((c) => ({ chainId: c.chainId, version: '1.0.0', label: c.chainId, description: `chain ${c.chainId}`, parameters: { type: 'object' }, ...(c.subChains ? { subChains: c.subChains } : {}), dag: { nodes: c.nodes, edges: c.edges ?? [] } })),
  };
}

const call = (id: string, ref: string) => ({ id, typeId: 'core.subWorkflow', config: { subChainRef: ref, waitForCompletion: true } });

describe('runs: sub-chains (RFC 0133)', () => {
  let t: TestApp;
  let publisher: string;
  let key: string;
  let other: string;

  beforeAll(async () => {
    t = await createTestApp();
    publisher = await t.key({ scopes: ['packs:publish', 'tools:read', 'runs:create', 'runs:read'] });
    key = await t.key({ scopes: ['runs:create', 'runs:read', 'tools:read'] });
    other = await t.key({ tenant: 'other', scopes: ['runs:create', 'runs:read', 'tools:read', 'packs:publish'] });
    const installed = await t.http('POST', '/v1/installed-packs', {
      token: publisher,
      body: pack('vendor.test.compose', [
        { chainId: 'vendor.test.parent', subChains: [{ ref: 'vendor.test.child' }], nodes: [call('first', 'vendor.test.child'), call('second', 'vendor.test.child')], edges: [{ from: 'first', to: 'second' }] },
        { chainId: 'vendor.test.other-parent', subChains: [{ ref: 'vendor.test.child' }], nodes: [call('only', 'vendor.test.child')] },
        { chainId: 'vendor.test.child', nodes: [{ id: 'set', typeId: 'core.setVariable', config: { variables: { made: 'by-child' } } }] },
      ]),
    });
    expect([installed.status, installed.body.problems]).toEqual([201, undefined]);
  });

  afterAll(async () => {
    await t?.close();
  });

  it('advertises workflowChainPacks.subChains with its depth bound', async () => {
    const d = await t.http('GET', '/.well-known/openwop');
    expect(d.body.workflowChainPacks.subChains).toEqual({ supported: true, maxDepth: 8 });
  });

  it('runs each reference as a child run of the tenant-scoped child workflow, one id for every parent', async () => {
    const r = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.test.parent' } });
    const done = await waitForStatus(t, key, r.body.runId, ['completed', 'failed']);
    expect(done.status).toBe('completed');
    expect(done.childRuns).toHaveLength(2);
    for (const c of done.childRuns) {
      const child = await waitForStatus(t, key, c.runId, ['completed']);
      expect([child.workflowId, child.parentRunId]).toEqual([CHILD_ID, r.body.runId]);
    }
    const o = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.test.other-parent' } });
    const od = await waitForStatus(t, key, o.body.runId, ['completed', 'failed']);
    expect(od.childRuns.map((c: { workflowId: string }) => c.workflowId)).toEqual([CHILD_ID]);
    // The co-registered child is a workflow of the tenant: readable and runnable by its id.
    expect((await t.http('GET', `/v1/workflows/${CHILD_ID}`, { token: key })).status).toBe(200);
    const direct = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: CHILD_ID } });
    expect((await waitForStatus(t, key, direct.body.runId, ['completed', 'failed'])).status).toBe('completed');
  });

  it('another tenant never reaches a tenant\'s child id, even with the same pack installed', async () => {
    expect((await t.http('GET', `/v1/workflows/${CHILD_ID}`, { token: other })).status).toBe(404);
    expect((await t.http('POST', '/v1/runs', { token: other, body: { workflowId: CHILD_ID } })).status).toBe(404);
    await t.http('POST', '/v1/installed-packs', { token: other, body: pack('vendor.test.compose', [{ chainId: 'vendor.test.child', nodes: [{ id: 'n', typeId: 'core.noop', config: {} }] }]) });
    expect((await t.http('POST', '/v1/runs', { token: other, body: { workflowId: CHILD_ID } })).status).toBe(404);
    expect((await t.http('GET', '/v1/workflows/wfc_other__vendor_test_child__1_0_0', { token: other })).status).toBe(200);
  });

  it('refuses at install: an undeclared or missing reference, a cycle, nesting past the bound', async () => {
    const codes = async (p: Record<string, unknown>) => {
      const r = await t.http('POST', '/v1/installed-packs', { token: publisher, body: p });
      expect([r.status, r.body.error]).toEqual([422, 'pack_invalid']);
      return (r.body.details.problems as Array<{ code: string; path: string }>).map((x) => [x.code, x.path]);
    };
    expect(await codes(pack('vendor.test.bad1', [{ chainId: 'vendor.test.p1', nodes: [call('c', 'vendor.test.nowhere')] }]))).toEqual([['sub_chain_unresolved', '/chains/0/dag/nodes/0/config/subChainRef']]);
    expect(await codes(pack('vendor.test.bad2', [{ chainId: 'vendor.test.p2', subChains: [{ ref: 'vendor.test.nowhere' }], nodes: [call('c', 'vendor.test.nowhere')] }]))).toEqual([['sub_chain_unresolved', '/chains/0/subChains']]);
    expect(
      await codes(
        pack('vendor.test.bad3', [
          { chainId: 'vendor.test.a', subChains: [{ ref: 'vendor.test.b' }], nodes: [call('c', 'vendor.test.b')] },
          { chainId: 'vendor.test.b', subChains: [{ ref: 'vendor.test.a' }], nodes: [call('c', 'vendor.test.a')] },
        ]),
      ),
    ).toEqual([['sub_chain_cycle', '/chains/1/dag/nodes/0/config/subChainRef']]);
    const ids = Array.from({ length: 10 }, (_, i) => `vendor.test.d${i}`);
    const deep = ids.map((id, i) => (i + 1 < ids.length ? { chainId: id, subChains: [{ ref: ids[i + 1] }], nodes: [call('c', ids[i + 1])] } : { chainId: id, nodes: [{ id: 'n', typeId: 'core.noop', config: {} }] }));
    expect(await codes(pack('vendor.test.bad4', deep))).toEqual([['sub_chain_max_depth_exceeded', '/chains/0']]);
    // A malformed subChains entry is the manifest schema's.
    const malformed = await t.http('POST', '/v1/installed-packs', { token: publisher, body: pack('vendor.test.bad5', [{ chainId: 'vendor.test.m', subChains: [{ ref: 7 }], nodes: [{ id: 'n', typeId: 'core.noop', config: {} }] }]) });
    expect([malformed.status, malformed.body.details.problems[0].code]).toEqual([422, 'invalid_manifest']);
  });
});
