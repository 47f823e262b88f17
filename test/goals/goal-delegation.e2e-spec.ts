/**
 * A goal's local runs act with exactly the scopes their work needs (runs:create and the scopes of the
 * chain's tools), delegated by the goal's creator, for as long as the creating API key still holds
 * them: a creator holding them all gets runs that call the scoped tool; one lacking any is refused
 * when creating the goal (403, nothing written); a revoked key starts no more runs.
 */
import * as path from 'node:path';
import { GoalClock } from '../../src/capabilities/goals/goal-clock';
import { GoalDelegationService } from '../../src/capabilities/goals/goal-delegation.service';
import { GoalSchedulerService } from '../../src/capabilities/goals/goal-scheduler.service';
import { ApiKeyService } from '../../src/platform/identity/api-key.service';
import { installChains, waitForStatus } from '../runs/run-kit';
import { createTestApp, TestApp } from '../support/test-app';
import { goalBody, ManualClock } from './goal-test-kit';

const FIXTURE = path.join(__dirname, '../fixtures/mcp/fixture-server.js');
/** Criteria no run output meets: every iteration runs, and the goal closes at its bound. */
const NEVER = { not: {} };

describe('goals: delegated scopes of local runs', () => {
  let t: TestApp;
  const clock = new ManualClock();
  let tick: () => ReturnType<GoalSchedulerService['runOnce']>;
  let auditor: string;

  beforeAll(async () => {
    // Starting the stdio MCP server (a node process loading the MCP SDK) can take more than the default 5 s on a loaded machine.
    t = await createTestApp({
      env: { OPENWOP_TOOL_SOURCE_TIMEOUT_MS: '30000' },
      configFile: {
        tools: {
          mcpServers: [
            { id: 'fx', transport: 'stdio', command: process.execPath, args: [FIXTURE], classification: { echo: { safetyTier: 'read', replayPolicy: 'idempotent', egress: 'none', auth: { scopes: ['tools:mcp:echo'] } } } },
          ],
        },
      },
    });
    t.moduleRef.get(GoalClock).useSource(clock.now);
    const scheduler = t.moduleRef.get(GoalSchedulerService);
    tick = () => scheduler.runOnce({ now: clock.now() });
    await installChains(t, 'acme', 'vendor.test.delegation', {
      'vendor.test.echo': { nodes: [{ id: 'call', typeId: 'core.tool', config: { toolId: 'mcp:fx.echo', arguments: { said: 'iteration {{inputs.iteration}}' } } }] },
    });
    auditor = await t.key({ tenant: 'acme', principal: 'auditor', scopes: ['runs:read'] });
  });

  afterAll(async () => {
    await t?.close();
  });

  async function goal(token: string, maxLoopIterations: number): Promise<string> {
    const res = await t.http('POST', '/v1/goals', { token, body: goalBody({ criteria: NEVER, workflowId: 'vendor.test.echo', bounds: { maxLoopIterations } }) });
    expect(res.status).toBe(201);
    return res.body.id as string;
  }

  /** Ticks until the goal has `n` recorded runs; answers their ids, oldest first (read from the goal's run records). */
  async function runsOf(id: string, n: number): Promise<string[]> {
    for (let i = 0; i < 60; i++) {
      await tick();
      const rows = (await t.ds.query(`SELECT "run_id" FROM "goal_run" WHERE "goal_id" = $1 ORDER BY "ordinal"`, [id])) as Array<{ run_id: string }>;
      if (rows.length >= n) return rows.map((r) => r.run_id);
      await new Promise((r) => setTimeout(r, 100));
      clock.advance(1000);
    }
    throw new Error(`goal ${id} did not record ${n} runs`);
  }

  it('a creator holding the tool scope: the goal\'s run calls the scoped tool', async () => {
    const alice = await t.key({ tenant: 'acme', principal: 'alice', scopes: ['goals:read', 'goals:write', 'runs:create', 'tools:mcp:echo', 'tools:read'] });
    const id = await goal(alice, 1);
    const [runId] = await runsOf(id, 1);
    const run = await waitForStatus(t, auditor, runId, ['completed', 'failed'], 30_000);
    expect(run.status).toBe('completed');
    expect(JSON.stringify(run.outputs.call)).toContain('iteration 1');
    // The run holds exactly what the work needs, not the creator's other scopes.
    const [row] = (await t.ds.query(`SELECT (SELECT p."scopes" FROM "run_principal" p WHERE p."tenant" = "run"."tenant" AND p."key" = "run"."principal_key") AS "scopes" FROM "run" WHERE "id" = $1`, [runId])) as Array<{ scopes: string[] }>;
    expect(row.scopes.sort()).toEqual(['runs:create', 'tools:mcp:echo']);
  });

  it('a creator without the tool scope is refused when creating the goal, and nothing is written', async () => {
    const bob = await t.key({ tenant: 'acme', principal: 'bob', scopes: ['goals:read', 'goals:write', 'runs:create'] });
    const res = await t.http('POST', '/v1/goals', { token: bob, body: goalBody({ criteria: NEVER, workflowId: 'vendor.test.echo', bounds: { maxLoopIterations: 1 } }) });
    expect([res.status, res.body.error]).toEqual([403, 'forbidden']);
    expect(res.body.details).toEqual({ requiredScopes: ['runs:create', 'tools:mcp:echo'], missingScopes: ['tools:mcp:echo'] });
    expect(await t.ds.query(`SELECT "id" FROM "goal" WHERE "principal" = 'bob'`)).toEqual([]);
  });

  it('revoking the creating key: the goal\'s next iteration starts no run (recorded as a refused, failed run)', async () => {
    const carol = await t.key({ tenant: 'acme', principal: 'carol', scopes: ['goals:read', 'goals:write', 'runs:create', 'tools:mcp:echo'] });
    const id = await goal(carol, 2);
    const [first] = await runsOf(id, 1);
    expect((await waitForStatus(t, auditor, first, ['completed', 'failed'], 30_000)).status).toBe('completed');
    const keys = t.moduleRef.get(ApiKeyService);
    const carolKey = (await keys.list('acme')).find((k) => k.principal === 'carol')!;
    await keys.revoke(carolKey.id, 'acme');
    expect([...(await t.moduleRef.get(GoalDelegationService).scopesFor(id, 'acme'))]).toEqual([]);
    const [, second] = await runsOf(id, 2);
    const run = await waitForStatus(t, auditor, second, ['completed', 'failed'], 30_000);
    expect([run.status, run.error?.code]).toEqual(['failed', 'forbidden']);
    // It never executed: no node ran.
    expect(await t.ds.query(`SELECT "node_id" FROM "run_node" WHERE "run_id" = $1`, [second])).toEqual([]);
  });

  it('another tenant\'s goal id, or a malformed one, delegates nothing', async () => {
    const alice = await t.key({ tenant: 'acme', principal: 'alice2', scopes: ['goals:read', 'goals:write', 'runs:create', 'tools:mcp:echo'] });
    const id = await goal(alice, 1);
    const delegation = t.moduleRef.get(GoalDelegationService);
    expect([...(await delegation.scopesFor(id, 'acme'))].sort()).toEqual(['runs:create', 'tools:mcp:echo']);
    expect([...(await delegation.scopesFor(id, 'globex'))]).toEqual([]);
    expect([...(await delegation.scopesFor('not-a-uuid', 'acme'))]).toEqual([]);
  });
});
