/**
 * The list methods (this host's additions to openwop.v1.Engine): ListRuns, ListTools,
 * ListApprovals and ListWorkflows answer, page for page, what their REST collection routes answer for the same
 * filters, limit and cursor (one cursor pages both transports); they refuse what REST refuses, with
 * the REST envelope; and a credential without the route's scope is PERMISSION_DENIED.
 */
import * as grpc from '@grpc/grpc-js';
import { installChains, noopChain, waitForStatus } from '../runs/run-kit';
import { createGrpcTestApp, GrpcTestApp, metadata, UnaryResult } from './grpc-kit';

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

const SCOPES = ['runs:create', 'runs:read', 'runs:cancel', 'approvals:respond', 'tools:read'];

function answered(r: UnaryResult): Json {
  if (!r.ok) throw new Error(`expected an answer, got ${grpc.status[r.error.code]} ${JSON.stringify(r.error.envelope)}`);
  return r.body;
}

/** A REST page body as the message carries it: `nextCursor: null` is the unset optional field. */
function asMessage(body: Json): Json {
  const { nextCursor, ...rest } = body;
  return nextCursor === null ? rest : body;
}

describe('gRPC transport: the list methods', () => {
  let g: GrpcTestApp;
  let full: string;
  let reader: string;
  let other: string;
  const waiting: string[] = [];
  const completed: string[] = [];

  const call = (method: string, body: Json, token?: string) => g.engine.call(method, body, metadata(token));
  const rest = (url: string, token?: string) => g.t.http('GET', url, { token });
  const start = async (workflowId: string, token = full): Promise<string> => {
    const r = await g.t.http('POST', '/v1/runs', { token, body: { workflowId, inputs: { n: 1 } } });
    expect(r.status).toBe(201);
    return r.body.runId as string;
  };

  /** The REST refusal and the gRPC one for the same query: the REST status, the gRPC code, one envelope. */
  async function sameRefusal(method: string, body: Json, token: string | undefined, url: string, code: grpc.status, httpStatus: number) {
    const viaRest = await rest(url, token);
    const r = await call(method, body, token);
    if (r.ok) throw new Error(`expected a refusal, got ${JSON.stringify(r.body)}`);
    expect({ method, status: viaRest.status, code: grpc.status[r.error.code], envelope: r.error.envelope }).toEqual({ method, status: httpStatus, code: grpc.status[code], envelope: viaRest.body });
    return r.error.envelope!;
  }

  beforeAll(async () => {
    g = await createGrpcTestApp({ env: { OPENWOP_SCHEDULER_ENABLED: 'false' } });
    full = await g.t.key({ scopes: SCOPES });
    reader = await g.t.key({ scopes: ['runs:read'] });
    other = await g.t.key({ tenant: 'other', scopes: SCOPES });
    await installChains(g.t, 'default', 'vendor.test.grpclist', {
      'vendor.test.grpclist.chain': noopChain(1),
      'vendor.test.grpclist.gate': { nodes: [{ id: 'gate', typeId: 'core.approval', config: { title: 'Ship {{inputs.n}}?', requiredApprovals: 1 } }] },
    });
    await installChains(g.t, 'other', 'vendor.test.grpclist-other', { 'vendor.test.grpclist.theirs': noopChain(1) });
    for (let i = 0; i < 3; i++) completed.push(await start('vendor.test.grpclist.chain'));
    for (let i = 0; i < 2; i++) waiting.push(await start('vendor.test.grpclist.gate'));
    for (const id of completed) await waitForStatus(g.t, full, id, ['completed']);
    for (const id of waiting) await waitForStatus(g.t, full, id, ['waiting-approval']);
    await waitForStatus(g.t, other, await start('vendor.test.grpclist.theirs', other), ['completed']);
  });

  afterAll(async () => {
    for (const id of waiting) await g?.t.http('POST', `/v1/runs/${id}/cancel`, { token: full, body: {} });
    await g?.close();
  });

  describe('ListRuns', () => {
    it('answers the REST page, page for page, with the same cursors; a cursor from either transport pages the other', async () => {
      const seen: string[] = [];
      let cursor: string | undefined;
      let viaGrpcCursor = false;
      for (let page = 0; page < 10; page++) {
        const q = `limit=2${cursor ? `&cursor=${cursor}` : ''}`;
        const viaRest = await rest(`/v1/runs?${q}`, full);
        expect(viaRest.status).toBe(200);
        const viaGrpc = answered(await call('ListRuns', { limit: 2, ...(cursor ? { cursor } : {}) }, full));
        expect(viaGrpc).toEqual(asMessage(viaRest.body));
        seen.push(...viaGrpc.runs.map((r: Json) => r.runId));
        cursor = viaGrpc.nextCursor;
        if (!cursor) break;
        viaGrpcCursor = true;
      }
      expect(viaGrpcCursor).toBe(true);
      // Newest first, the caller's tenant only: every run started here and none of the other tenant's.
      expect(seen).toEqual([...waiting].reverse().concat([...completed].reverse()));
    });

    it('filters by status like REST; limit and the default page', async () => {
      const viaRest = await rest('/v1/runs?status=waiting-approval', full);
      const viaGrpc = answered(await call('ListRuns', { status: 'waiting-approval' }, full));
      expect(viaGrpc).toEqual(asMessage(viaRest.body));
      expect(viaGrpc.runs.map((r: Json) => r.runId).sort()).toEqual([...waiting].sort());
      expect(viaGrpc.runs.every((r: Json) => r.status === 'waiting-approval')).toBe(true);
      // The snapshot carries the run's inputs (variables.inputs) as GetRun does.
      expect(viaGrpc.runs[0].variables).toEqual({ inputs: { n: 1 } });
      const empty = answered(await call('ListRuns', { status: 'failed' }, full));
      expect(empty).toEqual({ runs: [] });
      expect(answered(await call('ListRuns', {}, other)).runs).toHaveLength(1);
    });

    it('refuses what REST refuses: a bad status, limit or cursor (INVALID_ARGUMENT), a cursor of other filters, and a credential without runs:read', async () => {
      await sameRefusal('ListRuns', { status: 'sleeping' }, full, '/v1/runs?status=sleeping', grpc.status.INVALID_ARGUMENT, 400);
      await sameRefusal('ListRuns', { limit: 0 }, full, '/v1/runs?limit=0', grpc.status.INVALID_ARGUMENT, 400);
      await sameRefusal('ListRuns', { limit: 501 }, full, '/v1/runs?limit=501', grpc.status.INVALID_ARGUMENT, 400);
      await sameRefusal('ListRuns', { cursor: 'not a cursor!' }, full, `/v1/runs?cursor=${encodeURIComponent('not a cursor!')}`, grpc.status.INVALID_ARGUMENT, 400);
      const first = answered(await call('ListRuns', { limit: 1 }, full));
      expect(first.nextCursor).toEqual(expect.any(String));
      await sameRefusal('ListRuns', { status: 'completed', cursor: first.nextCursor }, full, `/v1/runs?status=completed&cursor=${first.nextCursor}`, grpc.status.INVALID_ARGUMENT, 400);
      const tools = await g.t.key({ scopes: ['tools:read'] });
      const denied = await sameRefusal('ListRuns', {}, tools, '/v1/runs', grpc.status.PERMISSION_DENIED, 403);
      expect(denied.details).toEqual({ requiredScopes: ['runs:read'], missingScopes: ['runs:read'] });
      await sameRefusal('ListRuns', {}, undefined, '/v1/runs', grpc.status.UNAUTHENTICATED, 401);
    });
  });

  describe('ListApprovals', () => {
    it('answers the REST page with the state filter and cursor; every gate a run opened is there, its title rendered', async () => {
      const viaRest = await rest('/v1/approvals?state=pending&limit=1', full);
      expect(viaRest.status).toBe(200);
      const first = answered(await call('ListApprovals', { state: 'pending', limit: 1 }, full));
      expect(first).toEqual(asMessage(viaRest.body));
      expect(first.nextCursor).toEqual(expect.any(String));
      const second = answered(await call('ListApprovals', { state: 'pending', limit: 1, cursor: first.nextCursor }, full));
      const restSecond = await rest(`/v1/approvals?state=pending&limit=1&cursor=${first.nextCursor}`, full);
      expect(second).toEqual(asMessage(restSecond.body));
      const gates = [...first.approvals, ...second.approvals];
      expect(gates.map((a: Json) => a.runId).sort()).toEqual([...waiting].sort());
      expect(gates.every((a: Json) => a.state === 'pending' && a.nodeId === 'gate')).toBe(true);
      expect(answered(await call('ListApprovals', { state: 'granted' }, full))).toEqual({ approvals: [] });
    });

    it('refuses what REST refuses; PERMISSION_DENIED without approvals:respond', async () => {
      await sameRefusal('ListApprovals', { state: 'maybe' }, full, '/v1/approvals?state=maybe', grpc.status.INVALID_ARGUMENT, 400);
      await sameRefusal('ListApprovals', { limit: 0 }, full, '/v1/approvals?limit=0', grpc.status.INVALID_ARGUMENT, 400);
      const denied = await sameRefusal('ListApprovals', {}, reader, '/v1/approvals', grpc.status.PERMISSION_DENIED, 403);
      expect(denied.details).toEqual({ requiredScopes: ['approvals:respond'], missingScopes: ['approvals:respond'] });
    });
  });

  describe('ListTools', () => {
    it('answers the REST catalog (the standard array and the compact {tools}) as `tools`, with the source filter', async () => {
      const standard = await rest('/v1/tools', full);
      expect(standard.status).toBe(200);
      expect(Array.isArray(standard.body)).toBe(true);
      // The chains installed here are tools of the workflow source: the lists compared are not empty.
      expect(standard.body.filter((t: Json) => t.source === 'workflow').length).toBeGreaterThan(0);
      expect(answered(await call('ListTools', {}, full))).toEqual({ tools: standard.body });
      expect(answered(await call('ListTools', { view: 'standard' }, full))).toEqual({ tools: standard.body });
      const compact = await rest('/v1/tools?view=compact', full);
      expect(answered(await call('ListTools', { view: 'compact' }, full))).toEqual(compact.body);
      // A view REST does not know is the standard one, as REST reads it.
      expect(answered(await call('ListTools', { view: 'detailed' }, full))).toEqual({ tools: standard.body });
      for (const source of ['workflow', 'mcp']) {
        const filtered = await rest(`/v1/tools?source=${source}`, full);
        expect(answered(await call('ListTools', { source }, full))).toEqual({ tools: filtered.body });
      }
    });

    it('refuses an unknown source as REST does; PERMISSION_DENIED without tools:read', async () => {
      const bad = await sameRefusal('ListTools', { source: 'telepathy' }, full, '/v1/tools?source=telepathy', grpc.status.INVALID_ARGUMENT, 400);
      expect(bad.details?.field).toBe('source');
      await sameRefusal('ListTools', {}, reader, '/v1/tools', grpc.status.PERMISSION_DENIED, 403);
    });
  });

  describe('ListWorkflows', () => {
    /** A REST workflow item as the message carries it: null members are unset fields. */
    const asSummary = (w: Json) => Object.fromEntries(Object.entries(w).filter(([, v]) => v !== null));

    it('answers the REST page (limit, cursor, pack filter) with each chain\'s declared parameters; one cursor pages both', async () => {
      const viaRest = await rest('/v1/workflows?limit=1', full);
      expect(viaRest.status).toBe(200);
      const first = answered(await call('ListWorkflows', { limit: 1 }, full));
      expect(first).toEqual({ workflows: viaRest.body.workflows.map(asSummary), nextCursor: viaRest.body.nextCursor });
      // The REST cursor pages gRPC: the second page is REST's second page.
      const second = answered(await call('ListWorkflows', { limit: 1, cursor: viaRest.body.nextCursor }, full));
      const restSecond = await rest(`/v1/workflows?limit=1&cursor=${first.nextCursor}`, full);
      expect(second.workflows).toEqual(restSecond.body.workflows.map(asSummary));
      const all = answered(await call('ListWorkflows', {}, full));
      expect(all.nextCursor).toBeUndefined();
      expect(all.workflows.map((w: Json) => w.workflowId)).toEqual(['vendor.test.grpclist.chain', 'vendor.test.grpclist.gate']);
      expect(all.workflows[0]).toEqual({
        workflowId: 'vendor.test.grpclist.chain',
        name: 'vendor.test.grpclist.chain',
        version: '1.0.0',
        description: 'chain vendor.test.grpclist.chain',
        pack: 'vendor.test.grpclist',
        parameters: { type: 'object' },
      });
      // The other tenant's chain is not listed; the pack filter narrows, and an unknown pack lists nothing.
      expect(answered(await call('ListWorkflows', {}, other)).workflows.map((w: Json) => w.workflowId)).toEqual(['vendor.test.grpclist.theirs']);
      expect(answered(await call('ListWorkflows', { pack: 'vendor.test.grpclist' }, full)).workflows).toHaveLength(2);
      const none = await rest('/v1/workflows?pack=nobody', full);
      expect(none.body).toEqual({ workflows: [], nextCursor: null });
      expect(answered(await call('ListWorkflows', { pack: 'nobody' }, full))).toEqual({ workflows: [] });
    });

    it('refuses what REST refuses (a cursor of another filter, a bad limit); PERMISSION_DENIED without manifest:read or runs:create', async () => {
      const first = answered(await call('ListWorkflows', { limit: 1 }, full));
      await sameRefusal('ListWorkflows', { pack: 'vendor.test.grpclist', limit: 1, cursor: first.nextCursor }, full, `/v1/workflows?pack=vendor.test.grpclist&limit=1&cursor=${first.nextCursor}`, grpc.status.INVALID_ARGUMENT, 400);
      await sameRefusal('ListWorkflows', { limit: 0 }, full, '/v1/workflows?limit=0', grpc.status.INVALID_ARGUMENT, 400);
      await sameRefusal('ListWorkflows', {}, reader, '/v1/workflows', grpc.status.PERMISSION_DENIED, 403);
      await sameRefusal('ListWorkflows', {}, undefined, '/v1/workflows', grpc.status.UNAUTHENTICATED, 401);
    });
  });
});
