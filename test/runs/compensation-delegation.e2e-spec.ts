/**
 * Delegated work and RFC 0151 inverse actions: an inverse action acts with the run's scopes as a forward node does,
 * so the authority a run's workflow needs (RunLauncher.requiredScopes) includes what its inverse actions need, child
 * chains they start included. Work set up on someone's behalf (a goal, an automation, a child run) by a principal
 * lacking a scope only an inverse action needs is refused when it is set up, with the same answer as when a forward
 * node needs it; holding it, the work is accepted, delegates it, and an unwind executes the inverse action with it.
 * A child run is refused alike whether its parent was started under major 1 or major 2.
 */
import * as path from 'node:path';
import { AutomationRunnerService } from '../../src/capabilities/proposals/automations/automation-runner.service';
import { RunLauncher } from '../../src/capabilities/runs/run-launcher.service';
import { CONFORMANCE_FIXTURES } from '../../src/capabilities/runs/workflow-resolver.service';
import { ToolCatalogService } from '../../src/capabilities/tool-catalog/tool-catalog.service';
import { ArtifactRegistryService } from '../../src/platform/artifacts/artifact-registry.service';
import { goalBody } from '../goals/goal-test-kit';
import { createTestApp, TestApp } from '../support/test-app';
import { chainPack, installChains, perMajor, runEvents, waitForStatus } from './run-kit';

const FIXTURE = path.join(__dirname, '../fixtures/mcp/fixture-server.js');
const TOOLS = {
  tools: {
    mcpServers: [
      { id: 'fx', transport: 'stdio', command: process.execPath, args: [FIXTURE], classification: { echo: { safetyTier: 'read', replayPolicy: 'idempotent', egress: 'none', auth: { scopes: ['tools:mcp:echo'] } } } },
    ],
  },
};
const TENANT = 'cmpdel';
/** An inverse action calling the scoped tool. */
const UNDO_BY_TOOL = { nodeTypeId: 'core.tool', inputMapping: { toolId: 'mcp:fx.echo', arguments: { said: 'undo' } } };
/** Installed as a chain pack. */
const CHAINS = {
  // A forward node needs the scope.
  'vendor.test.forward': { nodes: [{ id: 'call', typeId: 'core.tool', config: { toolId: 'mcp:fx.echo', arguments: { said: 'do' } } }] },
  // A parent starting the clean chain below as a child run.
  'vendor.test.parent': { nodes: [{ id: 'sub', typeId: 'core.subWorkflow', config: { workflowId: 'vendor.test.undo-clean' } }] },
};
/**
 * Served as host fixtures (with the test seams on): a chain pack's manifest cannot declare `compensation` yet
 * (workflow-chain-pack-manifest.schema.json), so, like the conformance compensation fixtures, these are the host's.
 */
const DECLARING = {
  // Only the inverse action needs the scope; the node after fails the run, so an unwind executes it.
  'vendor.test.undo': {
    settings: { compensation: { triggers: ['node-failure'] } },
    nodes: [
      { id: 'act', typeId: 'core.noop', config: {}, compensation: UNDO_BY_TOOL },
      { id: 'boom', typeId: 'core.fail', config: { code: 'order_failed', message: 'The order could not be shipped.' } },
    ],
    edges: [{ from: 'act', to: 'boom' }],
  },
  // The same declaration in a run that completes (nothing is unwound).
  'vendor.test.undo-clean': { settings: { compensation: { triggers: ['node-failure'] } }, nodes: [{ id: 'act', typeId: 'core.noop', config: {}, compensation: UNDO_BY_TOOL }] },
  // An inverse action starting a child chain whose forward node needs the scope.
  'vendor.test.undo-nested': { nodes: [{ id: 'act', typeId: 'core.noop', config: {}, compensation: { nodeTypeId: 'core.subWorkflow', inputMapping: { workflowId: 'vendor.test.forward' } } }] },
  // An inverse action needing nothing.
  'vendor.test.undo-free': { nodes: [{ id: 'act', typeId: 'core.noop', config: {}, compensation: { nodeTypeId: 'core.noop', inputMapping: { said: 'undo' } } }] },
};
const WORK = ['runs:create', 'tools:mcp:echo'];

describe('delegated work covers the inverse actions of a run (RFC 0151)', () => {
  let t: TestApp;
  let seq = 0;
  const key = (scopes: string[]) => t.key({ tenant: TENANT, principal: `c${++seq}`, scopes });
  const count = async (table: string): Promise<number> => ((await t.ds.query(`SELECT count(*)::int AS n FROM "${table}" WHERE "tenant" = $1`, [TENANT])) as Array<{ n: number }>)[0].n;

  beforeAll(async () => {
    Object.assign(CONFORMANCE_FIXTURES, DECLARING);
    t = await createTestApp({ configFile: TOOLS, env: { OPENWOP_TEST_SEAMS: 'true', OPENWOP_PROTOCOL_MAJORS: '1,2', OPENWOP_TOOL_SOURCE_TIMEOUT_MS: '30000' } });
    await installChains(t, TENANT, 'vendor.test.cmpdel', CHAINS);
    // A chain composing a sibling as a sub-chain (RFC 0133): the child is reached through config.subChainRef.
    const composing = chainPack('vendor.test.cmpdel-composed', {
      'vendor.test.composer': { nodes: [{ id: 'sub', typeId: 'core.subWorkflow', config: { subChainRef: 'vendor.test.composed' } }] },
      'vendor.test.composed': CHAINS['vendor.test.forward'],
    });
    (composing.chains as Array<Record<string, unknown>>)[0].subChains = [{ ref: 'vendor.test.composed' }];
    await t.app.get(ArtifactRegistryService).install('workflow-chain-pack', composing, { tenant: TENANT, principal: 'tester' }, 'test');
    // The tenant's catalog, listed once with the MCP server answering (a slow first start would leave the tool out of it).
    expect(await t.app.get(ToolCatalogService).descriptorOf({ tenant: TENANT }, 'mcp:fx.echo')).toMatchObject({ auth: { scopes: ['tools:mcp:echo'] } });
  });
  afterAll(async () => {
    for (const id of Object.keys(DECLARING)) delete CONFORMANCE_FIXTURES[id];
    await t?.close();
  });

  it('a run needs what its inverse actions need, and what the chains they (and its sub-chains) start need', async () => {
    const launcher = t.app.get(RunLauncher);
    const scope = { tenant: TENANT };
    for (const wf of ['vendor.test.forward', 'vendor.test.undo', 'vendor.test.undo-clean', 'vendor.test.undo-nested', 'vendor.test.parent', 'vendor.test.composer']) {
      expect([wf, await launcher.requiredScopes(scope, wf)]).toEqual([wf, WORK]);
    }
    expect(await launcher.requiredScopes(scope, 'vendor.test.undo-free')).toEqual(['runs:create']);
  });

  describe('goal create', () => {
    const body = (workflowId: string) => goalBody({ criteria: { not: {} }, workflowId, bounds: { maxLoopIterations: 1 } });

    it('lacking a scope only an inverse action needs: refused exactly as when a forward node needs it, nothing written', async () => {
      const token = await key(['goals:read', 'goals:write', 'runs:create']);
      const forward = await t.http('POST', '/v1/goals', { token, body: body('vendor.test.forward') });
      expect([forward.status, forward.body.error, forward.body.details]).toEqual([403, 'forbidden', { requiredScopes: WORK, missingScopes: ['tools:mcp:echo'] }]);
      for (const wf of ['vendor.test.undo', 'vendor.test.undo-nested']) {
        const inverse = await t.http('POST', '/v1/goals', { token, body: body(wf) });
        expect([wf, inverse.status, inverse.body]).toEqual([wf, 403, forward.body]);
      }
      expect(await count('goal')).toBe(0);
    });

    it('holding it: created, delegating it', async () => {
      const token = await key(['goals:read', 'goals:write', ...WORK]);
      const res = await t.http('POST', '/v1/goals', { token, body: body('vendor.test.undo') });
      expect(res.status).toBe(201);
      const [goal] = (await t.ds.query(`SELECT "delegated_scopes" FROM "goal" WHERE "id" = $1`, [res.body.id])) as Array<{ delegated_scopes: string[] }>;
      expect(goal.delegated_scopes).toEqual(WORK);
      expect((await t.http('POST', `/v1/goals/${res.body.id}/abandon`, { token, body: {} })).status).toBe(200);
    });
  });

  describe('automation via proposal apply', () => {
    const propose = async (token: string, name: string, workflowId: string) => {
      const p = await t.http('POST', '/v1/proposals', { token, body: { kind: 'automation', artifact: { name, schedule: { intervalMs: 3_600_000 }, action: { type: 'start-run', workflowId } }, provenance: { sourceRunIds: [] } } });
      expect(p.status).toBe(201);
      return p.body.id as string;
    };

    it('lacking it: refused exactly as for a forward node, nothing scheduled', async () => {
      const token = await key(['proposals:read', 'proposals:propose', 'packs:publish', 'runs:create']);
      const forward = await t.http('POST', `/v1/proposals/${await propose(token, 'fwd', 'vendor.test.forward')}/apply`, { token, body: {} });
      const inverse = await t.http('POST', `/v1/proposals/${await propose(token, 'inv', 'vendor.test.undo')}/apply`, { token, body: {} });
      expect([forward.status, forward.body.details?.missingScopes]).toEqual([403, ['tools:mcp:echo']]);
      expect([inverse.status, inverse.body]).toEqual([403, forward.body]);
      expect(await count('automation_schedule')).toBe(0);
    });

    it('holding it: installed with it delegated, and the unwind of its failed run executes the inverse action with it', async () => {
      const token = await key(['proposals:read', 'proposals:propose', 'packs:publish', ...WORK]);
      expect((await t.http('POST', `/v1/proposals/${await propose(token, 'undo-ok', 'vendor.test.undo')}/apply`, { token, body: {} })).status).toBe(200);
      const [row] = (await t.ds.query(`SELECT "delegated_scopes" FROM "automation_schedule" WHERE "tenant" = $1 AND "name" = 'undo-ok'`, [TENANT])) as Array<{ delegated_scopes: string[] }>;
      expect(row.delegated_scopes).toEqual(WORK);
      await t.ds.query(`UPDATE "automation_schedule" SET "next_run_at" = now() - interval '1 minute' WHERE "tenant" = $1 AND "name" = 'undo-ok'`, [TENANT]);
      const fired = (await t.app.get(AutomationRunnerService).fireDue(TENANT)).filter((f) => f.name === 'undo-ok');
      expect(fired).toHaveLength(1);
      await t.ds.query(`UPDATE "automation_schedule" SET "enabled" = false, "next_run_at" = NULL WHERE "tenant" = $1`, [TENANT]);
      const reader = await key(['runs:read']);
      const until = Date.now() + 30_000;
      let run = await waitForStatus(t, reader, fired[0].runId, ['failed'], 30_000);
      while (!['completed', 'partial', 'failed', 'manual'].includes(run.compensationStatus) && Date.now() < until) {
        await new Promise((r) => setTimeout(r, 100));
        run = (await t.http('GET', `/v1/runs/${fired[0].runId}`, { token: reader })).body;
      }
      expect([run.error?.code, run.compensationStatus]).toEqual(['order_failed', 'completed']);
      const tools = (await runEvents(t, reader, fired[0].runId)).filter((e) => e.type === 'agent.toolCalled');
      expect(tools.map((e) => e.payload.toolName)).toEqual(['mcp:fx.echo']);
    });
  });

  describe.each([1, 2] as const)('child runs, parent started under major %i', (major) => {
    let token: string;
    const { at, idAt, bare } = perMajor(() => t, () => token, TENANT);
    const children = async (): Promise<number> => ((await t.ds.query(`SELECT count(*)::int AS n FROM "run" WHERE "tenant" = $1 AND "workflow_id" = 'vendor.test.undo-clean'`, [TENANT])) as Array<{ n: number }>)[0].n;

    it('lacking it: the child run is refused (forbidden, naming it) and never created', async () => {
      token = await key(['runs:create', 'runs:read', 'tools:read']);
      const before = await children();
      const r = await at(major, 'POST', '/runs', { workflowId: 'vendor.test.parent' });
      expect(r.status).toBe(201);
      const runId = bare(r.body.runId as string);
      await waitForStatus(t, token, runId, ['completed', 'failed'], 30_000);
      const done = (await at(major, 'GET', `/runs/${idAt(major, runId)}`)).body;
      expect([done.status, done.error?.code]).toEqual(['failed', 'forbidden']);
      expect(done.error.message).toContain('tools:mcp:echo');
      expect(await children()).toBe(before);
    });

    it('holding it: the child runs and the parent completes', async () => {
      token = await key(['runs:create', 'runs:read', 'tools:read', 'tools:mcp:echo']);
      const before = await children();
      const r = await at(major, 'POST', '/runs', { workflowId: 'vendor.test.parent' });
      expect(r.status).toBe(201);
      expect((await waitForStatus(t, token, bare(r.body.runId as string), ['completed', 'failed'], 30_000)).status).toBe('completed');
      expect(await children()).toBe(before + 1);
    });
  });
});
