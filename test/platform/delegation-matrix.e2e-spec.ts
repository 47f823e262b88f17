/**
 * Every path that stores authority to act later (goal create, an automation installed by applying
 * a proposal, by releasing its approval gate or by an import, an import of each item kind, child
 * runs) checks at creation that the creator holds every scope the work will need. A creator missing
 * any one of them is refused with 403 `forbidden` naming `details.requiredScopes`, nothing is
 * written and nothing runs; the same creator holding them all succeeds (so each refusal is the
 * missing scope's doing), and the delegation records exactly the scopes the work needs.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { AutomationRunnerService } from '../../src/capabilities/proposals/automations/automation-runner.service';
import { GoalClock } from '../../src/capabilities/goals/goal-clock';
import { GoalSchedulerService } from '../../src/capabilities/goals/goal-scheduler.service';
import { RunLauncher } from '../../src/capabilities/runs/run-launcher.service';
import { ToolCatalogService } from '../../src/capabilities/tool-catalog/tool-catalog.service';
import { ArtifactRegistryService } from '../../src/platform/artifacts/artifact-registry.service';
import { systemPrincipal } from '../../src/platform/identity/principal';
import { goalBody, ManualClock } from '../goals/goal-test-kit';
import { installChains, waitForStatus } from '../runs/run-kit';
import { createTestApp, TestApp } from '../support/test-app';

const FIXTURE = path.join(__dirname, '../fixtures/mcp/fixture-server.js');
const GITHUB = JSON.parse(fs.readFileSync(path.resolve(__dirname, '../fixtures/connection-packs/connection-pack-github.json'), 'utf8')) as Record<string, unknown> & { name: string; provider: { id: string } };
const TOOLS = {
  tools: {
    mcpServers: [
      { id: 'fx', transport: 'stdio', command: process.execPath, args: [FIXTURE], classification: { echo: { safetyTier: 'read', replayPolicy: 'idempotent', egress: 'none', auth: { scopes: ['tools:mcp:echo'] } } } },
    ],
  },
};
/** A chain calling a tool that needs `tools:mcp:echo`, and a chain calling that chain as a child run. */
const CHAINS = {
  'vendor.test.scoped': { nodes: [{ id: 'call', typeId: 'core.tool', config: { toolId: 'mcp:fx.echo', arguments: { said: 'hi' } } }] },
  'vendor.test.parent': { nodes: [{ id: 'sub', typeId: 'core.tool', config: { toolId: 'workflow:vendor.test.scoped', arguments: {} } }] },
};
const WORK = ['runs:create', 'tools:mcp:echo'];
const AUTOMATION = { name: 'every-second', schedule: { intervalMs: 1000 }, action: { type: 'start-run', workflowId: 'vendor.test.scoped' } };
const CREDENTIAL_KEYS = `k1:${Buffer.alloc(32, 9).toString('base64')}`;

type Counts = Record<string, number>;

async function rowCounts(t: TestApp): Promise<Counts> {
  const tables = (await t.ds.query(`SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY table_name`)) as Array<{ table_name: string }>;
  const out: Counts = {};
  for (const { table_name } of tables) out[table_name] = ((await t.ds.query(`SELECT count(*)::int AS n FROM "${table_name}"`)) as Array<{ n: number }>)[0].n;
  return out;
}

function expectRefused(res: { status: number; body: any }, required: string[], missing: string[]): void { // eslint-disable-line @typescript-eslint/no-explicit-any
  expect([res.status, res.body.error]).toEqual([403, 'forbidden']);
  expect(res.body.details.requiredScopes).toEqual([...required].sort());
  expect(res.body.details.missingScopes).toEqual([...missing].sort());
}

describe('delegation matrix: a creator missing a required scope is refused and nothing runs', () => {
  let t: TestApp;
  const clock = new ManualClock();
  let seq = 0;
  const key = (tenant: string, scopes: string[], workspace?: string) => t.key({ tenant, workspace, principal: `p${++seq}`, scopes });

  beforeAll(async () => {
    // Starting the stdio MCP server (a node process loading the MCP SDK) can take more than the default 5 s on a loaded machine.
    t = await createTestApp({ configFile: TOOLS, env: { OPENWOP_CREDENTIAL_KEYS: CREDENTIAL_KEYS, OPENWOP_TOOL_SOURCE_TIMEOUT_MS: '30000' } });
    t.moduleRef.get(GoalClock).useSource(clock.now);
    await installChains(t, 'dst', 'vendor.test.matrix', CHAINS);
    // The tenant's first catalog listing pins the MCP tool definitions (and audits the MCP server's
    // revision downgrade): done here, so a refused request below is measured against a listed catalog.
    await t.app.get(ToolCatalogService).load({ tenant: 'dst' });
  });
  afterAll(() => t?.close());

  /** Every scheduler pass that could start work: goal ticks and due automations. */
  async function tickEverything(): Promise<void> {
    const scheduler = t.moduleRef.get(GoalSchedulerService);
    for (let i = 0; i < 3; i++) {
      await scheduler.runOnce({ now: clock.now() });
      clock.advance(2000);
    }
    await t.ds.query(`UPDATE "automation_schedule" SET "next_run_at" = now() - interval '1 minute' WHERE "enabled"`);
    await t.app.get(AutomationRunnerService).fireDue();
  }

  describe('goal create', () => {
    const body = goalBody({ criteria: { not: {} }, workflowId: 'vendor.test.scoped', bounds: { maxLoopIterations: 2 } });

    it.each(WORK)('without %s: 403, no goal, no run', async (missing) => {
      const token = await key('dst', ['goals:read', 'goals:write', ...WORK.filter((s) => s !== missing)]);
      const before = await rowCounts(t);
      expectRefused(await t.http('POST', '/v1/goals', { token, body }), WORK, [missing]);
      await tickEverything();
      expect(await rowCounts(t)).toEqual(before);
    });

    it('holding them all: the goal runs, its delegation is exactly the work\'s scopes', async () => {
      const token = await key('dst', ['goals:read', 'goals:write', 'keys:manage', ...WORK]);
      const res = await t.http('POST', '/v1/goals', { token, body });
      expect(res.status).toBe(201);
      try {
        const [goal] = (await t.ds.query(`SELECT "delegated_scopes" FROM "goal" WHERE "id" = $1`, [res.body.id])) as Array<{ delegated_scopes: string[] }>;
        expect(goal.delegated_scopes).toEqual(WORK);
        for (let i = 0; i < 40; i++) {
          await t.moduleRef.get(GoalSchedulerService).runOnce({ now: clock.now() });
          if (((await t.ds.query(`SELECT 1 FROM "goal_run" WHERE "goal_id" = $1`, [res.body.id])) as unknown[]).length) break;
          clock.advance(1000);
          await new Promise((r) => setTimeout(r, 100));
        }
        const [{ run_id }] = (await t.ds.query(`SELECT "run_id" FROM "goal_run" WHERE "goal_id" = $1`, [res.body.id])) as Array<{ run_id: string }>;
        const reader = await key('dst', ['runs:read']);
        expect((await waitForStatus(t, reader, run_id, ['completed', 'failed'], 30_000)).status).toBe('completed');
      } finally {
        // Closed, so the ticks of the other cases start nothing for it.
        expect((await t.http('POST', `/v1/goals/${res.body.id}/abandon`, { token, body: {} })).status).toBe(200);
      }
    });

    it('an edit that changes the work checks it again', async () => {
      const token = await key('dst', ['goals:read', 'goals:write', 'runs:create']);
      const manual = await t.http('POST', '/v1/goals', { token, body: { ...body, continuation: { mode: 'manual' }, workflowId: undefined, schedule: undefined } });
      expect(manual.status).toBe(201);
      const before = await rowCounts(t);
      expectRefused(await t.http('PATCH', `/v1/goals/${manual.body.id}`, { token, body: { continuation: { mode: 'schedule' }, workflowId: 'vendor.test.scoped' } }), WORK, ['tools:mcp:echo']);
      expect(await rowCounts(t)).toEqual(before);
    });
  });

  describe('automation via proposal apply', () => {
    it.each(WORK)('without %s: 403, the proposal stays a draft, nothing is scheduled, nothing runs', async (missing) => {
      const token = await key('dst', ['proposals:read', 'proposals:propose', 'packs:publish', ...WORK.filter((s) => s !== missing)]);
      const p = await t.http('POST', '/v1/proposals', { token, body: { kind: 'automation', artifact: { ...AUTOMATION, name: `apply-${missing.replace(/:/g, '-')}` }, provenance: { sourceRunIds: [] } } });
      expect(p.status).toBe(201);
      const before = await rowCounts(t);
      expectRefused(await t.http('POST', `/v1/proposals/${p.body.id}/apply`, { token, body: {} }), WORK, [missing]);
      await tickEverything();
      expect(await rowCounts(t)).toEqual(before);
      expect((await t.http('GET', `/v1/proposals/${p.body.id}`, { token })).body.state).toBe('draft');
    });

    it('holding them all: installed, delegating exactly the work\'s scopes, and it fires', async () => {
      const token = await key('dst', ['proposals:read', 'proposals:propose', 'packs:publish', 'goals:read', ...WORK]);
      const p = await t.http('POST', '/v1/proposals', { token, body: { kind: 'automation', artifact: { ...AUTOMATION, name: 'apply-ok' }, provenance: { sourceRunIds: [] } } });
      expect((await t.http('POST', `/v1/proposals/${p.body.id}/apply`, { token, body: {} })).status).toBe(200);
      const [row] = (await t.ds.query(`SELECT "delegated_scopes" FROM "automation_schedule" WHERE "name" = 'apply-ok'`)) as Array<{ delegated_scopes: string[] }>;
      expect(row.delegated_scopes).toEqual(WORK);
      await t.ds.query(`UPDATE "automation_schedule" SET "next_run_at" = now() - interval '1 minute' WHERE "name" = 'apply-ok'`);
      const fired = (await t.app.get(AutomationRunnerService).fireDue('dst')).filter((f) => f.name === 'apply-ok');
      expect(fired).toHaveLength(1);
      expect((await waitForStatus(t, await key('dst', ['runs:read']), fired[0].runId, ['completed', 'failed'], 30_000)).status).toBe('completed');
      await t.ds.query(`UPDATE "automation_schedule" SET "enabled" = false, "next_run_at" = NULL WHERE "name" = 'apply-ok'`);
    });
  });

  describe('imports, per item kind', () => {
    let bundle: { bundleVersion: string; source: Record<string, unknown>; items: Array<{ kind: string; ref: string; dependsOn?: string[]; payload: Record<string, unknown> }> };

    beforeAll(async () => {
      const registry = t.app.get(ArtifactRegistryService);
      const src = { tenant: 'src', principal: 'alice' };
      await installChains(t, 'src', 'vendor.test.matrix', CHAINS);
      await registry.install('prompt-template', { templateId: 'vendor.acme.writer', version: '1.0.0', kind: 'system', text: 'You write.', variables: [] }, src, 'api');
      // Disabled at the source, so the ticks below fire nothing there either.
      await registry.install('automation', { ...AUTOMATION, name: 'imported', enabled: false }, src, 'api');
      const admin = await t.key({ tenant: 'src', principal: 'root', roles: ['admin'] });
      expect((await t.http('POST', '/v1/connection-packs', { token: admin, body: GITHUB })).status).toBe(201);
      expect((await t.http('POST', '/v1/connections', { token: admin, body: { provider: GITHUB.provider.id, name: 'gh', credential: 'ghp_matrix_secret' } })).status).toBe(201);
      bundle = (await t.http('GET', '/v1/export', { token: admin })).body;
      expect(bundle.items.map((i) => i.ref).sort()).toEqual(['automation:imported', 'connection-pack:' + GITHUB.name, 'connection:gh', 'prompt-template:vendor.acme.writer', 'workflow-chain-pack:vendor.test.matrix'].sort());
    });

    /** The bundle with only the item `ref` (edges to items left out dropped). */
    const only = (ref: string) => ({ bundle: { ...bundle, items: bundle.items.filter((i) => i.ref === ref).map((i) => ({ ...i, dependsOn: [] })) } });

    const cases: Array<[string, () => string, string[]]> = [
      ['a workflow-chain pack', () => 'workflow-chain-pack:vendor.test.matrix', ['packs:publish']],
      ['a prompt template', () => 'prompt-template:vendor.acme.writer', ['packs:publish']],
      ['a schedule (an automation that starts runs)', () => 'automation:imported', ['packs:publish', ...WORK]],
      ['a connection pack', () => `connection-pack:${GITHUB.name}`, ['connections:manage']],
      ['a connection reference', () => 'connection:gh', ['connections:manage']],
    ];

    describe.each(cases)('%s', (_label, ref, required) => {
      it.each(required)('without %s: 403 on plan and apply, nothing written', async (missing) => {
        const token = await key('dst', ['portability:import', ...required.filter((s) => s !== missing)]);
        const before = await rowCounts(t);
        expectRefused(await t.http('POST', '/v1/import?dryRun=true', { token, body: only(ref()) }), required, [missing]);
        expectRefused(await t.http('POST', '/v1/import', { token, body: only(ref()) }), required, [missing]);
        await tickEverything();
        expect(await rowCounts(t)).toEqual(before);
      });

      it('holding them all: imported', async () => {
        const token = await key('dst', ['portability:import', ...required]);
        const res = await t.http('POST', '/v1/import', { token, body: only(ref()) });
        expect([res.status, res.body.counts?.failed]).toEqual([200, 0]);
      });
    });

    it('tenant-wide items (connections, connection packs) are refused to a workspace-bound importer holding every scope', async () => {
      const token = await key('dst2', ['portability:import', 'packs:publish', 'connections:manage', ...WORK], 'w1');
      for (const ref of ['connection:gh', `connection-pack:${GITHUB.name}`]) {
        const before = await rowCounts(t);
        const res = await t.http('POST', '/v1/import', { token, body: only(ref) });
        expect([res.status, res.body.error, res.body.details.tenantLevel, res.body.details.items]).toEqual([403, 'forbidden', true, [ref]]);
        expect(await rowCounts(t)).toEqual(before);
      }
    });

    it('an imported schedule records the importer\'s delegation: exactly the work\'s scopes', async () => {
      const [row] = (await t.ds.query(`SELECT "enabled", "delegated_scopes" FROM "automation_schedule" WHERE "tenant" = 'dst' AND "name" = 'imported'`)) as Array<{ enabled: boolean; delegated_scopes: string[] }>;
      expect(row).toEqual({ enabled: false, delegated_scopes: WORK });
    });
  });

  describe('child runs', () => {
    it('a parent run whose principal lacks a scope the child chain needs: the child is refused (forbidden) and never created', async () => {
      const token = await key('dst', ['runs:create', 'runs:read', 'tools:read']);
      const before = ((await t.ds.query(`SELECT count(*)::int AS n FROM "run" WHERE "workflow_id" = 'vendor.test.scoped'`)) as Array<{ n: number }>)[0].n;
      const r = await t.http('POST', '/v1/runs', { token, body: { workflowId: 'vendor.test.parent' } });
      expect(r.status).toBe(201);
      const done = await waitForStatus(t, token, r.body.runId, ['completed', 'failed'], 30_000);
      expect([done.status, done.error?.code]).toEqual(['failed', 'forbidden']);
      expect(done.error.message).toContain('tools:mcp:echo');
      expect(((await t.ds.query(`SELECT count(*)::int AS n FROM "run" WHERE "workflow_id" = 'vendor.test.scoped'`)) as Array<{ n: number }>)[0].n).toBe(before);
    });

    it('a principal without runs:create starts no child run', async () => {
      const runs = t.app.get(RunLauncher);
      const before = await rowCounts(t);
      await expect(runs.startChild(systemPrincipal('dst', undefined, ['tools:mcp:echo', 'tools:read']), 'vendor.test.scoped', {}, '00000000-0000-4000-8000-000000000000')).rejects.toMatchObject({
        status: 403,
        code: 'forbidden',
        details: { requiredScopes: WORK, missingScopes: ['runs:create'] },
      });
      expect(await rowCounts(t)).toEqual(before);
    });

    it('holding them all: the child runs and its outputs flow back', async () => {
      const token = await key('dst', ['runs:create', 'runs:read', 'tools:read', 'tools:mcp:echo']);
      const r = await t.http('POST', '/v1/runs', { token, body: { workflowId: 'vendor.test.parent' } });
      expect((await waitForStatus(t, token, r.body.runId, ['completed', 'failed'], 30_000)).status).toBe('completed');
    });
  });
});

describe('delegation matrix: approval grant', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp({
      configFile: { ...TOOLS, proposals: { approval: { quorum: 1, timeoutMs: 3_600_000 } } },
      env: { OPENWOP_PROPOSALS_ACTIVATION: 'approval-gate', OPENWOP_TOOL_SOURCE_TIMEOUT_MS: '30000' },
    });
    await installChains(t, 'acme', 'vendor.test.matrix', CHAINS);
    await t.app.get(ToolCatalogService).load({ tenant: 'acme' });
  });
  afterAll(() => t?.close());

  async function gate(name: string): Promise<{ proposalId: string; gateId: string }> {
    const publisher = await t.key({ tenant: 'acme', principal: `pub-${name}`, scopes: ['proposals:read', 'proposals:propose', 'packs:publish'] });
    const p = await t.http('POST', '/v1/proposals', { token: publisher, body: { kind: 'automation', artifact: { ...AUTOMATION, name }, provenance: { sourceRunIds: [] } } });
    const applied = await t.http('POST', `/v1/proposals/${p.body.id}/apply`, { token: publisher, body: {} });
    expect(applied.body.status).toBe('pending-approval');
    return { proposalId: p.body.id, gateId: applied.body.pendingApprovalId };
  }

  it.each(WORK)('an approver without %s: 403, the gate stays pending, nothing is installed or runs', async (missing) => {
    const { gateId } = await gate(`gate-${missing.replace(/:/g, '-')}`);
    const approver = await t.key({ tenant: 'acme', principal: `ap-${missing}`, scopes: ['approvals:respond', ...WORK.filter((s) => s !== missing)] });
    const before = await rowCounts(t);
    expectRefused(await t.http('POST', `/v1/approvals/${gateId}/grant`, { token: approver, body: {} }), WORK, [missing]);
    await t.ds.query(`UPDATE "automation_schedule" SET "next_run_at" = now() - interval '1 minute' WHERE "enabled"`);
    await t.app.get(AutomationRunnerService).fireDue();
    expect(await rowCounts(t)).toEqual(before);
    expect((await t.http('GET', `/v1/approvals/${gateId}`, { token: approver })).body).toMatchObject({ state: 'pending', granted: 0 });
  });

  it('an approver holding them all releases it, delegating exactly the work\'s scopes', async () => {
    const { gateId } = await gate('gate-ok');
    const approver = await t.key({ tenant: 'acme', principal: 'ap-ok', scopes: ['approvals:respond', ...WORK, 'keys:manage'] });
    const res = await t.http('POST', `/v1/approvals/${gateId}/grant`, { token: approver, body: {} });
    expect([res.status, res.body.state]).toEqual([200, 'granted']);
    const [row] = (await t.ds.query(`SELECT "installed_by", "delegated_scopes" FROM "automation_schedule" WHERE "name" = 'gate-ok'`)) as Array<{ installed_by: string; delegated_scopes: string[] }>;
    expect(row).toEqual({ installed_by: 'ap-ok', delegated_scopes: WORK });
  });
});
