/**
 * Replica safety: two host processes on one server database, one killed (SIGKILL) mid-run: every run
 * finishes on the other, no node is completed twice; a side-effecting node found in flight is failed
 * `node_interrupted`, not repeated.
 */
import { ChildProcess, fork } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { RunEngineService } from '../../src/capabilities/runs/engine/run-engine.service';
import { createTestApp, TestApp } from '../support/test-app';
import { expectNoDoubleCompletion, expectSchemaValid, installChains, runEvents, waitForStatus } from './run-kit';
import { tempDirs } from '../support/temp-dirs';

const temp = tempDirs();

function databaseUrl(db: string): string {
  const u = new URL(process.env.DATABASE_URL!);
  if (process.env.OPENWOP_TEST_DB_MODE !== 'embedded') u.pathname = `/${db}`;
  return u.toString();
}

async function startReplica(url: string, name: string): Promise<{ proc: ChildProcess; base: string }> {
  const dir = temp.make('openwop-replica-');
  const cfg = path.join(dir, 'config.json');
  fs.writeFileSync(cfg, JSON.stringify({ runs: { leaseMs: 1500, claimIntervalMs: 100 } }));
  const proc = fork(path.join(__dirname, 'replica-host.ts'), [], {
    execArgv: ['-r', '@swc-node/register'],
    env: {
      ...process.env,
      SWC_NODE_PROJECT: path.join(__dirname, '../../tsconfig.json'),
      DATABASE_URL: url,
      OPENWOP_CONFIG: cfg,
      OPENWOP_DATA_DIR: dir,
      OPENWOP_SCHEDULER_ENABLED: 'true',
      OPENWOP_BOOTSTRAP_KEY: 'false',
      OPENWOP_INSTANCE_ID: name,
      LOG_LEVEL: 'error',
    },
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  const port = await new Promise<number>((resolve, reject) => {
    proc.once('message', (m: { port: number }) => resolve(m.port));
    proc.once('exit', (code) => reject(new Error(`replica ${name} exited with ${code}`)));
  });
  return { proc, base: `http://127.0.0.1:${port}` };
}

describe('runs: replicas', () => {
  let t: TestApp;
  let key: string;
  const procs: ChildProcess[] = [];

  beforeAll(async () => {
    t = await createTestApp();
    key = await t.key({ scopes: ['runs:create', 'runs:read', 'runs:cancel'] });
    await installChains(t, 'default', 'vendor.test.replicas', {
      'vendor.test.steps': {
        nodes: [
          { id: 'a', typeId: 'core.noop', config: { v: 1 } },
          { id: 'b', typeId: 'core.delay', config: { ms: 1500 } },
          { id: 'c', typeId: 'core.noop', config: { v: 3 } },
          { id: 'd', typeId: 'core.delay', config: { ms: 1500 } },
          { id: 'e', typeId: 'core.noop', config: { v: 5 } },
        ],
        edges: [{ from: 'a', to: 'b' }, { from: 'b', to: 'c' }, { from: 'c', to: 'd' }, { from: 'd', to: 'e' }],
      },
      'vendor.test.effect': { nodes: [{ id: 'call', typeId: 'core.tool', config: { toolId: 'mcp:nowhere.effect' } }] },
    });
  });

  afterAll(async () => {
    for (const p of procs) if (p.exitCode === null) p.kill('SIGKILL');
    await t?.close();
  });

  it('finishes every run of a replica killed mid-run on the other one, no node completed twice', async () => {
    const url = databaseUrl(t.databaseName);
    const a = await startReplica(url, 'replica-a');
    procs.push(a.proc);
    const b = await startReplica(url, 'replica-b');
    procs.push(b.proc);
    const ids: string[] = [];
    for (let i = 0; i < 12; i++) {
      const res = await fetch(`${a.base}/v1/runs`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ workflowId: 'vendor.test.steps', inputs: { i } }) });
      expect(res.status).toBe(201);
      ids.push(((await res.json()) as { runId: string }).runId);
    }
    // Kill A while it holds runs that are in their delays.
    let ownedByA = 0;
    for (let i = 0; i < 100 && !ownedByA; i++) {
      ownedByA = (await t.ds.query(`SELECT count(*)::int AS n FROM "run" WHERE "lease_owner" LIKE 'replica-a:%' AND "status" = 'running'`))[0].n as number;
      if (!ownedByA) await new Promise((r) => setTimeout(r, 50));
    }
    expect(ownedByA).toBeGreaterThan(0);
    a.proc.kill('SIGKILL');
    for (const id of ids) {
      const done = await waitForStatus(t, key, id, ['completed', 'failed', 'cancelled'], 30_000);
      expect([id, done.status]).toEqual([id, 'completed']);
      expect(done.outputs).toEqual({ e: { v: 5 } });
      const events = await runEvents(t, key, id);
      expectSchemaValid(events);
      expect(events.filter((e) => e.type === 'run.completed')).toHaveLength(1);
      expect(events.filter((e) => e.type === 'run.started')).toHaveLength(1);
    }
    await expectNoDoubleCompletion(t);
    const finishedByB = (await t.ds.query(`SELECT count(*)::int AS n FROM "run" WHERE "id" = ANY($1) AND "fence" > 1`, [ids]))[0].n as number;
    expect(finishedByB).toBeGreaterThan(0);
  }, 60_000);

  it('fails a side-effecting node left in flight with node_interrupted instead of repeating it', async () => {
    const res = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.test.effect' } });
    const runId = res.body.runId as string;
    await waitForStatus(t, key, runId, ['failed', 'completed']);
    // Rewind it to the state a replica that died during the call leaves behind.
    await t.ds.query(`DELETE FROM "event" WHERE "stream_key" = (SELECT "key" FROM "event_stream" WHERE "stream_id" = $1) AND "event_type_name"("code", "type") NOT IN ('run.started', 'node.started')`, [runId]);
    await t.ds.query(`UPDATE "run_node" SET "status" = 'running', "error" = NULL WHERE "run_id" = $1`, [runId]);
    await t.ds.query(
      `UPDATE "run" SET "status" = 'running', "error" = NULL, "completed_at" = NULL, "lease_owner" = 'dead-replica', "lease_expires_at" = now() - interval '1 second' WHERE "id" = $1`,
      [runId],
    );
    t.app.get(RunEngineService).kick(runId);
    const done = await waitForStatus(t, key, runId, ['failed', 'completed']);
    expect([done.status, done.error.code]).toEqual(['failed', 'node_interrupted']);
    const events = await runEvents(t, key, runId);
    expect(events.filter((e) => e.type === 'agent.toolCalled')).toHaveLength(0);
    expect(events.find((e) => e.type === 'node.failed')!.payload).toMatchObject({ nodeId: 'call', error: { code: 'node_interrupted' } });
  });

  it('fails a run the engine cannot execute with engine_error instead of retrying it forever', async () => {
    const [{ id }] = (await t.ds.query(
      `INSERT INTO "run" ("tenant", "principal", "kind", "status", "metadata", "workflow_id", "definition_key", "inputs", "configurable", "principal_key")
       VALUES ('default', 'tester', 'workflow', 'pending', '{}'::jsonb, 'broken', run_definition_ref('default', '{"nodes": 3}'::jsonb), '{}'::jsonb, '{}'::jsonb, run_principal_ref('default', NULL, '{}'::text[])) RETURNING "id"`,
    )) as Array<{ id: string }>;
    t.app.get(RunEngineService).kick(id);
    const done = await waitForStatus(t, key, id, ['failed', 'completed']);
    expect([done.status, done.error.code]).toEqual(['failed', 'engine_error']);
    const events = await runEvents(t, key, id);
    expect(events.map((e) => e.type)).toEqual(['run.started', 'run.failed']);
  });

  it('fails a run whose engine write keeps failing with a recorded engine_error, logged with its run id, its nodes agreeing', async () => {
    await installChains(t, 'default', 'vendor.test.faulty', {
      'vendor.test.faulty': {
        nodes: [{ id: 'a', typeId: 'core.noop', config: { v: 1 } }, { id: 'b', typeId: 'core.delay', config: { ms: 200 } }, { id: 'c', typeId: 'core.noop', config: { v: 3 } }],
        edges: [{ from: 'a', to: 'b' }, { from: 'b', to: 'c' }],
      },
    });
    // Not the database being away (that is retried): a write the database refuses every time.
    await t.ds.query(`CREATE FUNCTION "refuse_b"() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW."node_id" = 'b' AND NEW."status" = 'completed' THEN RAISE EXCEPTION 'node b may not complete'; END IF;
        RETURN NEW;
      END $$`);
    await t.ds.query(`CREATE TRIGGER "refuse_b" BEFORE INSERT OR UPDATE ON "run_node" FOR EACH ROW EXECUTE FUNCTION "refuse_b"()`);
    try {
      const r = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.test.faulty' } });
      const done = await waitForStatus(t, key, r.body.runId, ['failed', 'completed']);
      expect([done.status, done.error.code]).toEqual(['failed', 'engine_error']);
      const states = done.nodeStates as Record<string, { status: string; error?: { code: string } }>;
      // Nothing is left running or pending under a terminal run; b, whose completion was refused, did not complete.
      expect(Object.values(states).every((s) => ['completed', 'failed', 'skipped'].includes(s.status))).toBe(true);
      expect(states.b?.status).not.toBe('completed');
      expect(states.c?.status).not.toBe('completed');
      expect(Object.keys(states).sort()).toEqual(['a', 'b', 'c']);
      const events = await runEvents(t, key, r.body.runId);
      expectSchemaValid(events);
      expect(events[events.length - 1]).toMatchObject({ type: 'run.failed', payload: { error: { code: 'engine_error' } } });
      const line = t.logs.find((l) => l.includes('run engine fault; failing the run') && l.includes(r.body.runId));
      expect(line).toMatch(/"level":"error"/);
    } finally {
      await t.ds.query(`DROP TRIGGER "refuse_b" ON "run_node"`);
    }
  });
});
