/**
 * Forks and the installed chains, and who asked for a fork: a fork that would execute a chain
 * uninstalled since its source ran (or a version of it no longer installed) is refused with 422
 * `workflow_not_installed` and nothing happens (no run, no tool call), unless
 * OPENWOP_FORK_UNINSTALLED_CHAINS=allow; the principal who asked is kept on the fork (`forked_by`,
 * the snapshot's `fork.requestedBy`) and audited (`run.forked`); the fork acts with no scope its
 * requester lacks.
 */
import { ArtifactRegistryService } from '../../src/platform/artifacts/artifact-registry.service';
import { createTestApp, TestApp } from '../support/test-app';
import { chainPack, runEvents, waitForStatus } from './run-kit';

const PACK = 'vendor.test.fork-gone';
/** A noop, then a call of the host's echo tool. */
const CHAIN = {
  nodes: [
    { id: 'prep', typeId: 'core.noop', config: { word: 'go' } },
    { id: 'call', typeId: 'core.tool', config: { toolId: 'x-host-openwop-echo', arguments: { message: 'hello {{nodes.prep.word}}' } } },
  ],
  edges: [{ from: 'prep', to: 'call' }],
};
const OWNER_SCOPES = ['runs:create', 'runs:read', 'runs:cancel', 'tools:read'];
const tester = { tenant: 'default', principal: 'tester' };

describe.each([
  ['refused by default', {}],
  ['OPENWOP_FORK_UNINSTALLED_CHAINS=allow', { OPENWOP_FORK_UNINSTALLED_CHAINS: 'allow' }],
])('runs: a fork of a chain no longer installed (%s)', (_label, env) => {
  const allowed = 'OPENWOP_FORK_UNINSTALLED_CHAINS' in env;
  let t: TestApp;
  let owner: string;
  let requester: string;
  let registry: ArtifactRegistryService;

  beforeAll(async () => {
    t = await createTestApp({ env: { OPENWOP_TEST_SEAMS: 'true', ...env } });
    registry = t.app.get(ArtifactRegistryService);
    owner = await t.key({ principal: 'owner', scopes: OWNER_SCOPES });
    // Another principal of the tenant, with fewer scopes than the owner.
    requester = await t.key({ principal: 'requester', scopes: ['runs:create', 'runs:read'] });
  });

  afterAll(async () => {
    await t?.close();
  });

  const install = (chain: Record<string, unknown>, version = '1.0.0') =>
    registry.install('workflow-chain-pack', { ...chainPack(PACK, { 'test-fork-gone': chain }), version }, tester, 'test');
  const uninstall = () => registry.uninstall(tester, 'workflow-chain-pack', PACK);
  const finished = async (workflowId = 'test-fork-gone') => {
    const r = await t.http('POST', '/v1/runs', { token: owner, body: { workflowId, inputs: {} } });
    expect(r.status).toBe(201);
    await waitForStatus(t, owner, r.body.runId, ['completed']);
    return r.body.runId as string;
  };
  const count = async (sql: string) => Number(((await t.ds.query(sql)) as Array<{ n: string }>)[0].n);
  const runs = () => count(`SELECT count(*) AS n FROM "run"`);
  const toolCalls = () => count(`SELECT count(*) AS n FROM "event" WHERE "type" = 'agent.toolCalled'`);
  const forkAudits = async () => (await t.ds.query(`SELECT "entry" FROM "audit_entry" WHERE "tenant" = 'default' AND "action" = 'run.forked' ORDER BY "seq"`)) as Array<{ entry: Record<string, any> }>; // eslint-disable-line @typescript-eslint/no-explicit-any

  it('a branch (and a replay) of a chain uninstalled since its source ran: 422 workflow_not_installed and nothing runs, or (allowed) it runs the recorded chain', async () => {
    await install(CHAIN);
    const source = await finished();
    const src = await runEvents(t, owner, source);
    expect(src.filter((e) => e.type === 'agent.toolCalled')).toHaveLength(1);
    const branchPoint = src.find((e) => e.type === 'node.completed' && e.nodeId === 'prep')!.sequence + 1;
    await uninstall();
    const [runsBefore, callsBefore, auditsBefore] = [await runs(), await toolCalls(), (await forkAudits()).length];

    const branch = await t.http('POST', `/v1/runs/${source}:fork`, { token: owner, body: { mode: 'branch', fromSeq: branchPoint } });
    const replay = await t.http('POST', `/v1/runs/${source}:fork`, { token: owner, body: { mode: 'replay' } });
    if (!allowed) {
      for (const r of [branch, replay]) {
        expect(r.status).toBe(422);
        expect(r.body).toEqual({
          error: 'workflow_not_installed',
          message: expect.stringContaining('is no longer installed'),
          details: { sourceRunId: source, workflowId: 'test-fork-gone', reason: 'uninstalled', setting: 'OPENWOP_FORK_UNINSTALLED_CHAINS' },
        });
      }
      // Nothing was created, called or audited.
      await new Promise((r) => setTimeout(r, 300));
      expect([await runs(), await toolCalls(), (await forkAudits()).length]).toEqual([runsBefore, callsBefore, auditsBefore]);
      // Installed again as it was, the chain forks again.
      await install(CHAIN);
      const again = await t.http('POST', `/v1/runs/${source}:fork`, { token: owner, body: { mode: 'branch', fromSeq: branchPoint } });
      expect(again.status).toBe(201);
      await waitForStatus(t, owner, again.body.runId, ['completed']);
      await uninstall();
      return;
    }
    expect([branch.status, replay.status]).toEqual([201, 201]);
    await waitForStatus(t, owner, branch.body.runId, ['completed']);
    await waitForStatus(t, owner, replay.body.runId, ['completed']);
    // Both called the tool again (a replay runs a tool that declares itself deterministic live, so
    // a replay is refused like a branch); the audit says the chain was not installed.
    expect(await toolCalls()).toBe(callsBefore + 2);
    expect((await forkAudits()).slice(-2).map((a) => a.entry.details.chain)).toEqual(['uninstalled', 'uninstalled']);
  });

  it('a chain installed in another version since: refused (reason "changed"), or (allowed) the recorded chain runs; a fork that executes no node is never refused', async () => {
    await install(CHAIN);
    const source = await finished();
    const recorded = (await t.http('GET', `/v1/runs/${source}`, { token: owner })).body.outputs;
    const last = (await runEvents(t, owner, source)).at(-1)!.sequence;
    await uninstall();
    await install({ ...CHAIN, nodes: [CHAIN.nodes[0], { ...CHAIN.nodes[1], config: { ...CHAIN.nodes[1].config, arguments: { message: 'changed' } } }] }, '1.1.0');
    const r = await t.http('POST', `/v1/runs/${source}:fork`, { token: owner, body: { mode: 'branch', fromSeq: 1 } });
    if (allowed) {
      expect(r.status).toBe(201);
      const snap = await waitForStatus(t, owner, r.body.runId, ['completed']);
      // The source's chain, not the one installed now.
      expect(snap.outputs).toEqual(recorded);
      expect(JSON.stringify(snap.outputs)).not.toContain('changed');
    } else {
      expect(r.status).toBe(422);
      expect(r.body).toMatchObject({ error: 'workflow_not_installed', details: { reason: 'changed', installedVersion: '1.0.0', workflowId: 'test-fork-gone' } });
      expect(r.body.message).toContain('was changed since run');
    }
    // From the last sequence every node is settled by the history: nothing is executed, nothing refused.
    await uninstall();
    const settled = await t.http('POST', `/v1/runs/${source}:fork`, { token: owner, body: { mode: 'replay', fromSeq: last } });
    expect(settled.status).toBe(201);
    await waitForStatus(t, owner, settled.body.runId, ['completed']);
    expect((await forkAudits()).at(-1)!.entry.details.chain).toBe('not-executed');
  });

  it('the requester is kept on the fork and audited; the fork is the owner\'s run acting with no scope its requester lacks', async () => {
    await install(CHAIN);
    const source = await finished();
    const r = await t.http('POST', `/v1/runs/${source}:fork`, { token: requester, body: { mode: 'branch', fromSeq: 1 } });
    expect(r.status).toBe(201);
    const forkId = r.body.runId as string;
    const snap = await waitForStatus(t, requester, forkId, ['completed', 'failed']);
    expect(snap.owner).toEqual({ tenant: 'default', principal: 'owner' });
    expect(snap.fork).toEqual({ sourceRunId: source, mode: 'branch', fromSeq: 1, requestedBy: 'requester' });
    const [row] = (await t.ds.query(`SELECT "principal", "forked_by", (SELECT p."scopes" FROM "run_principal" p WHERE p."tenant" = "run"."tenant" AND p."key" = "run"."principal_key") AS "scopes" FROM "run" WHERE "id" = $1`, [forkId])) as Array<{ principal: string; forked_by: string; scopes: string[] }>;
    expect(row.principal).toBe('owner');
    expect(row.forked_by).toBe('requester');
    expect([...row.scopes].sort()).toEqual(['runs:create', 'runs:read']);
    const audit = (await forkAudits()).at(-1)!.entry;
    expect(audit).toMatchObject({
      action: 'run.forked',
      actor: { principal: 'requester', kind: 'api-key' },
      resource: { type: 'run', id: forkId },
      details: { sourceRunId: source, mode: 'branch', fromSeq: 1, workflowId: 'test-fork-gone', owner: 'owner', chain: 'installed', scopesNotHeld: ['runs:cancel', 'tools:read'] },
    });
    // A run that is no fork shows no lineage and records no requester.
    expect((await t.http('GET', `/v1/runs/${source}`, { token: owner })).body.fork).toBeUndefined();
    await uninstall();
  });

  it('the conformance fixture still forks at fromSeq 0 (201) and completes', async () => {
    const source = await finished('conformance-noop');
    const r = await t.http('POST', `/v1/runs/${source}:fork`, { token: owner, body: { mode: 'replay', fromSeq: 0 } });
    expect(r.status).toBe(201);
    await waitForStatus(t, owner, r.body.runId, ['completed']);
  });
});
