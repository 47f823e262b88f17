/**
 * A run's workspace snapshot (RFC 0059 §D, docs/workspace.md): `ctx.workspace` read through the
 * `core.workspace.read` node answers the files as of the run's start, whatever is written while the
 * run is suspended; the next run sees the writes; a run resumed by another host process reads the same
 * snapshot; a replay reads its source's; tenants and workspaces read their own stores; a version the
 * snapshot needs that the store no longer retains fails the read clearly; retention deletes a run's
 * snapshot point with the run.
 */
import { RetentionService } from '../../src/platform/retention/retention.service';
import { createTestApp, TestApp } from '../support/test-app';
import { installChains, runEvents, waitForStatus } from '../runs/run-kit';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const FILES = '/v1/host/workspace/files';
const SCOPES = ['runs:create', 'runs:read', 'approvals:respond', 'workspace:read', 'workspace:write'];
const READ = { path: 'notes/a.md', prefix: 'notes/' };
// Read, wait on a gate (the run holds no replica meanwhile), read again.
const CHAIN = {
  nodes: [
    { id: 'r1', typeId: 'core.workspace.read', config: READ },
    { id: 'gate', typeId: 'core.approval', config: { title: 'Go on?' } },
    { id: 'r2', typeId: 'core.workspace.read', config: READ },
  ],
  edges: [{ from: 'r1', to: 'gate' }, { from: 'gate', to: 'r2' }],
};

describe('workspace run snapshot (RFC 0059 §D)', () => {
  let t: TestApp;
  let acme: string;
  let globex: string;
  let acmeW1: string;

  beforeAll(async () => {
    t = await createTestApp({ env: { OPENWOP_WORKSPACE_MAX_VERSIONS: '3' } });
    acme = await t.key({ tenant: 'acme', principal: 'alice', scopes: SCOPES });
    acmeW1 = await t.key({ tenant: 'acme', workspace: 'w1', principal: 'wendy', scopes: SCOPES });
    globex = await t.key({ tenant: 'globex', principal: 'bob', scopes: SCOPES });
    for (const tenant of ['acme', 'globex']) {
      await installChains(t, tenant, 'vendor.test.ws', {
        'ws-read': CHAIN,
        'ws-get': { ...CHAIN, nodes: CHAIN.nodes.map((n) => (n.id === 'gate' ? n : { ...n, config: { path: 'notes/q.md' } })) },
        // A child run (RFC 0007 sub-agent) has its parent's tenant and workspace, so it reads the same store.
        'ws-child': { nodes: [{ id: 'r', typeId: 'core.workspace.read', config: READ }], edges: [] },
        'ws-parent': { nodes: [{ id: 'sub', typeId: 'core.subWorkflow', config: { workflowId: 'ws-child' } }], edges: [] },
      });
    }
  });
  afterAll(() => t.close());

  const put = async (token: string, path: string, content: string) => {
    const r = await t.http('PUT', `${FILES}/${path}`, { token, body: { content } });
    expect(r.status).toBe(200);
    return r.body as Json;
  };
  const start = async (app: TestApp, token: string) => {
    const r = await app.http('POST', '/v1/runs', { token, body: { workflowId: 'ws-read' } });
    expect(r.status).toBe(201);
    await waitForStatus(app, token, r.body.runId, ['waiting-approval']);
    return r.body.runId as string;
  };
  const release = async (token: string, runId: string, status = 'completed') => {
    expect((await t.http('POST', `/v1/runs/${runId}/interrupts/gate`, { token, body: { resumeValue: { action: 'accept' } } })).status).toBe(200);
    return waitForStatus(t, token, runId, [status]);
  };
  const read = async (token: string, runId: string, nodeId: string) => {
    const e = (await runEvents(t, token, runId)).find((x) => x.type === 'node.completed' && x.nodeId === nodeId);
    return e?.payload.outputs as Json;
  };
  const contentOf = (o: Json) => (o.file === null ? null : o.file.content);
  const pathsOf = (o: Json) => (o.files as Json[]).map((f) => `${f.path}@${f.version}`);

  it('reads the files as of its start, on another host after its resume too; a write meanwhile is seen by the next run only', async () => {
    const v1 = await put(acme, 'notes/a.md', 'before');
    // Started and suspended by a second host process, which is then gone.
    const second = await createTestApp({ database: t.databaseName, env: { OPENWOP_WORKSPACE_MAX_VERSIONS: '3' } });
    let runId: string;
    try {
      const k2 = await second.key({ tenant: 'acme', principal: 'alice', scopes: SCOPES });
      runId = await start(second, k2);
    } finally {
      await second.close();
    }
    await put(acme, 'notes/a.md', 'during');
    await put(acme, 'notes/b.md', 'new');
    await t.http('DELETE', `${FILES}/notes/a.md`, { token: acme });
    await put(acme, 'notes/c.md', 'newer');
    // This host resumes the run: both reads answer the snapshot of its start.
    await release(acme, runId);
    const r1 = await read(acme, runId, 'r1');
    const r2 = await read(acme, runId, 'r2');
    expect(r1.file).toEqual({ path: 'notes/a.md', content: 'before', contentType: 'text/markdown', version: 1, etag: '"v1"', updatedAt: v1.updatedAt });
    expect(r2).toEqual(r1);
    expect(r1.files).toEqual([{ path: 'notes/a.md', contentType: 'text/markdown', version: 1, etag: '"v1"', updatedAt: v1.updatedAt }]);

    // The next run starts after the writes: a.md deleted (a tombstone at version 3), b.md and c.md there.
    const next = await start(t, acme);
    await put(acme, 'notes/b.md', 'after the next start');
    await release(acme, next);
    for (const node of ['r1', 'r2']) {
      const o = await read(acme, next, node);
      expect(contentOf(o)).toBeNull();
      expect(pathsOf(o)).toEqual(['notes/b.md@1', 'notes/c.md@1']);
    }

    // A replay of the first run reads its source's snapshot, not today's files.
    const fork = await t.http('POST', `/v1/runs/${runId}:fork`, { token: acme, body: { fromSeq: 0, mode: 'replay' } });
    expect(fork.status).toBe(201);
    await waitForStatus(t, acme, fork.body.runId, ['completed']);
    const replayed = await t.http('GET', `/v1/runs/${fork.body.runId}/events/poll?lastSequence=0`, { token: acme });
    const reads = (replayed.body.events as Json[]).filter((e) => e.type === 'node.completed' && e.nodeId !== 'gate').map((e) => contentOf(e.payload.outputs));
    expect(reads).toEqual(['before', 'before']);
    const [pin] = (await t.ds.query(`SELECT "revision" FROM "workspace_run_snapshot" WHERE "run_id" = $1`, [fork.body.runId])) as Json[];
    const [source] = (await t.ds.query(`SELECT "revision" FROM "workspace_run_snapshot" WHERE "run_id" = $1`, [runId])) as Json[];
    expect(pin).toEqual(source);
  });

  it('reads its owner tenant and workspace store only', async () => {
    await put(globex, 'notes/a.md', 'globex only');
    await put(acmeW1, 'notes/w1.md', 'w1 only');
    const g = await start(t, globex);
    const w = await start(t, acmeW1);
    await release(globex, g);
    await release(acmeW1, w);
    const go = await read(globex, g, 'r1');
    expect([contentOf(go), pathsOf(go)]).toEqual(['globex only', ['notes/a.md@1']]);
    const wo = await read(acmeW1, w, 'r1');
    expect([contentOf(wo), pathsOf(wo)]).toEqual([null, ['notes/w1.md@1']]);
    // Another tenant's run is not even readable.
    expect((await t.http('GET', `/v1/runs/${g}`, { token: acme })).status).toBe(404);
    // A child run reads its parent's store (workspace w1), as of its own start.
    const parent = await t.http('POST', '/v1/runs', { token: acmeW1, body: { workflowId: 'ws-parent' } });
    expect(parent.status).toBe(201);
    const done = await waitForStatus(t, acmeW1, parent.body.runId, ['completed']);
    const childRunId = done.childRuns[0].runId as string;
    const co = await read(acmeW1, childRunId, 'r');
    expect([contentOf(co), pathsOf(co)]).toEqual([null, ['notes/w1.md@1']]);
    // Retention deletes a run's snapshot point with the run.
    const pinned = async (runId: string) => ((await t.ds.query(`SELECT 1 FROM "workspace_run_snapshot" WHERE "run_id" = $1`, [runId])) as unknown[]).length;
    expect([await pinned(g), await pinned(w)]).toEqual([1, 1]);
    await t.ds.query(`UPDATE "run" SET "completed_at" = now() - interval '400 days' WHERE "id" = $1`, [g]);
    const swept = await t.app.get(RetentionService).sweep();
    expect(swept.workspaceSnapshots).toBe(1);
    expect([await pinned(g), await pinned(w)]).toEqual([0, 1]);
  });

  it('fails the read workspace_snapshot_unavailable when the version it needs is no longer retained', async () => {
    await put(acme, 'notes/p.md', 'p1');
    const runId = await start(t, acme);
    // maxVersions 3: three writes after the snapshot age its version out.
    for (const v of ['p2', 'p3', 'p4']) await put(acme, 'notes/p.md', v);
    await release(acme, runId, 'failed');
    const failed = (await runEvents(t, acme, runId)).find((e) => e.type === 'node.failed');
    expect([failed?.nodeId, (failed?.payload.error as Json)?.code]).toEqual(['r2', 'workspace_snapshot_unavailable']);
    // The same for one file read by its path (the list above failed on notes/p.md).
    await put(acme, 'notes/q.md', 'q1');
    const r = await t.http('POST', '/v1/runs', { token: acme, body: { workflowId: 'ws-get' } });
    await waitForStatus(t, acme, r.body.runId, ['waiting-approval']);
    for (const v of ['q2', 'q3', 'q4']) await put(acme, 'notes/q.md', v);
    await release(acme, r.body.runId, 'failed');
    const events = await runEvents(t, acme, r.body.runId);
    expect(contentOf(events.find((e) => e.type === 'node.completed' && e.nodeId === 'r1')!.payload.outputs as Json)).toBe('q1');
    const gone = events.find((e) => e.type === 'node.failed');
    expect([gone?.nodeId, (gone?.payload.error as Json)?.code]).toEqual(['r2', 'workspace_snapshot_unavailable']);
  });

  it('a run started by its own insert (every node deterministic) records its point after the insert, and a replayed create records none', async () => {
    await put(globex, 'notes/eager.md', 'eager-before');
    const key = 'eager-snapshot-create-0001';
    const r = await t.http('POST', '/v1/runs', { token: globex, body: { workflowId: 'ws-child' }, headers: { 'idempotency-key': key } });
    expect(r.status).toBe(201);
    const runId = r.body.runId as string;
    await waitForStatus(t, globex, runId, ['completed']);
    expect(pathsOf(await read(globex, runId, 'r'))).toContain('notes/eager.md@1');
    const again = await t.http('POST', '/v1/runs', { token: globex, body: { workflowId: 'ws-child' }, headers: { 'idempotency-key': key } });
    expect([again.status, again.body.runId]).toEqual([201, runId]);
    // One point, of the run that exists; the replay's start wrote none for a run that was never inserted.
    const points = await t.ds.query(`SELECT s."run_id" FROM "workspace_run_snapshot" s LEFT JOIN "run" r ON r."id"::text = s."run_id"::text WHERE s."tenant" = 'globex' AND r."id" IS NULL`);
    expect(points).toEqual([]);
    expect(await t.ds.query(`SELECT "revision" FROM "workspace_run_snapshot" WHERE "tenant" = 'globex' AND "run_id" = $1`, [runId])).toHaveLength(1);
  });

  it('gives no ctx.workspace while the host does not serve the workspace: core.workspace.read fails capability_not_provided', async () => {
    // A host of its own (on the first one's database, that host's engine could claim the run).
    const off = await createTestApp({ env: { OPENWOP_WORKSPACE: 'false' } });
    try {
      await installChains(off, 'acme', 'vendor.test.ws', { 'ws-child': { nodes: [{ id: 'r', typeId: 'core.workspace.read', config: READ }], edges: [] } });
      const k = await off.key({ tenant: 'acme', principal: 'alice', scopes: ['runs:create', 'runs:read'] });
      const r = await off.http('POST', '/v1/runs', { token: k, body: { workflowId: 'ws-child' } });
      expect(r.status).toBe(201);
      await waitForStatus(off, k, r.body.runId, ['failed']);
      const failed = (await runEvents(off, k, r.body.runId)).find((e) => e.type === 'node.failed');
      expect((failed?.payload.error as Json)?.code).toBe('capability_not_provided');
      expect(await off.ds.query(`SELECT 1 FROM "workspace_run_snapshot" WHERE "run_id" = $1`, [r.body.runId])).toEqual([]);
    } finally {
      await off.close();
    }
  });
});
