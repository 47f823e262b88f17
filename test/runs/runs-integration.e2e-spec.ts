/** Other capabilities on the run engine: a fired automation starts a real run. */
import { AutomationRunnerService } from '../../src/capabilities/proposals/automations/automation-runner.service';
import { createTestApp, TestApp } from '../support/test-app';
import { installChains, noopChain, runEvents, waitForStatus } from './run-kit';

describe('runs: integration', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp();
  });

  afterAll(async () => {
    await t?.close();
  });

  it('a core.tool node with a malformed call count is refused (422 workflow_invalid) and writes nothing', async () => {
    const token = await t.key({ tenant: 'calls', principal: 'ops', scopes: ['runs:create', 'runs:read'] });
    await installChains(t, 'calls', 'vendor.test.calls', {
      'vendor.test.zero': { nodes: [{ id: 'call', typeId: 'core.tool', config: { toolId: 'x', calls: 0 } }] },
      'vendor.test.many': { nodes: [{ id: 'call', typeId: 'core.tool', config: { toolId: 'x', calls: 11 } }] },
      'vendor.test.text': { nodes: [{ id: 'call', typeId: 'core.tool', config: { toolId: 'x', calls: 'two' } }] },
    });
    for (const workflowId of ['vendor.test.zero', 'vendor.test.many', 'vendor.test.text']) {
      const res = await t.http('POST', '/v1/runs', { token, body: { workflowId } });
      expect([res.status, res.body.error]).toEqual([422, 'workflow_invalid']);
    }
    expect((await t.ds.query(`SELECT count(*)::int AS n FROM "run" WHERE "tenant" = 'calls'`))[0].n).toBe(0);
  });

  it('a fired automation starts a real run of its workflow; GET /v1/automations shows its id and status', async () => {
    const admin = await t.key({ tenant: 'auto', principal: 'ops', roles: ['admin'] });
    await installChains(t, 'auto', 'vendor.test.auto', { 'vendor.test.nightly': noopChain(2) });
    const automation = { name: 'nightly', schedule: { intervalMs: 60000 }, action: { type: 'start-run', workflowId: 'vendor.test.nightly', inputs: { days: 1 } } };
    const p = await t.http('POST', '/v1/proposals', { token: admin, body: { kind: 'automation', artifact: automation, provenance: { sourceRunIds: [] } } });
    expect(p.status).toBe(201);
    expect((await t.http('POST', `/v1/proposals/${p.body.id}/apply`, { token: admin, body: {} })).status).toBe(200);
    await t.ds.query(`UPDATE "automation_schedule" SET "next_run_at" = now() - interval '1 minute' WHERE "tenant" = 'auto'`);
    const fired = await t.app.get(AutomationRunnerService).fireDue('auto');
    expect(fired).toHaveLength(1);
    const done = await waitForStatus(t, admin, fired[0].runId, ['completed', 'failed']);
    expect(done).toMatchObject({ status: 'completed', workflowId: 'vendor.test.nightly', owner: { tenant: 'auto', principal: 'ops' } });
    expect((await runEvents(t, admin, fired[0].runId))[0].payload).toMatchObject({ workflowId: 'vendor.test.nightly', inputs: { days: 1 } });
    const listed = (await t.http('GET', '/v1/automations', { token: admin })).body.automations as Array<Record<string, unknown>>;
    expect(listed[0]).toMatchObject({ name: 'nightly', lastRunId: fired[0].runId, lastRunStatus: 'completed', runCount: 1 });
  });

  it("a fired automation's runs act with exactly the scopes its work needs, and start no more once the installer's key is revoked", async () => {
    const installer = await t.key({ tenant: 'deleg', principal: 'installer', scopes: ['proposals:read', 'proposals:propose', 'packs:publish', 'runs:read', 'runs:create', 'tools:custom'] });
    const reader = await t.key({ tenant: 'deleg', principal: 'reader', scopes: ['runs:read'] });
    await installChains(t, 'deleg', 'vendor.test.deleg', { 'vendor.test.hourly': noopChain(1) });
    const automation = { name: 'hourly', schedule: { intervalMs: 60000 }, action: { type: 'start-run', workflowId: 'vendor.test.hourly' } };
    const p = await t.http('POST', '/v1/proposals', { token: installer, body: { kind: 'automation', artifact: automation, provenance: { sourceRunIds: [] } } });
    expect(p.status).toBe(201);
    expect((await t.http('POST', `/v1/proposals/${p.body.id}/apply`, { token: installer, body: {} })).status).toBe(200);
    const fire = async () => {
      await t.ds.query(`UPDATE "automation_schedule" SET "next_run_at" = now() - interval '1 minute' WHERE "tenant" = 'deleg'`);
      const fired = await t.app.get(AutomationRunnerService).fireDue('deleg');
      expect(fired).toHaveLength(1);
      return fired[0].runId;
    };
    const first = await fire();
    expect((await waitForStatus(t, reader, first, ['completed', 'failed'])).status).toBe('completed');
    const [row] = (await t.ds.query(`SELECT (SELECT p."scopes" FROM "run_principal" p WHERE p."tenant" = "run"."tenant" AND p."key" = "run"."principal_key") AS "scopes" FROM "run" WHERE "id" = $1`, [first])) as Array<{ scopes: string[] }>;
    // The chain calls no scoped tool: the run holds runs:create only, not the installer's other scopes.
    expect(row.scopes).toEqual(['runs:create']);
    const { ApiKeyService } = await import('../../src/platform/identity/api-key.service');
    const keys = t.app.get(ApiKeyService);
    const id = (await keys.list('deleg')).find((k) => k.principal === 'installer')!.id;
    await keys.revoke(id, 'deleg');
    // Revoked: the slot is recorded as a failed automation run (forbidden) and no workflow run starts.
    const second = await fire();
    const [rec] = (await t.ds.query(`SELECT "kind", "status", "metadata" FROM "run" WHERE "id" = $1`, [second])) as Array<{ kind: string; status: string; metadata: { error?: { code: string } } }>;
    expect([rec.kind, rec.status, rec.metadata.error?.code]).toEqual(['automation', 'failed', 'forbidden']);
    const [{ n }] = (await t.ds.query(`SELECT count(*)::int AS n FROM "run" WHERE "tenant" = 'deleg' AND "kind" = 'workflow'`)) as Array<{ n: number }>;
    expect(n).toBe(1);
  });
});
