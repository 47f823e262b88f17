/**
 * A parent run waiting on its `core.subWorkflow` child survives a host restart, on the embedded
 * engine and on a PostgreSQL server: the host stops (SIGTERM) while the child waits on an approval,
 * the next host claims the parent again, its node finds the child it started (the linkage is in the
 * database) instead of starting another, and once the child's gate is resolved both complete.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ChildProcess } from 'node:child_process';
import { HostProcess, startHostProcess } from '../support/host-process';
import { createScratchDatabase } from '../support/scratch-db';

const SCOPES = ['runs:create', 'runs:read', 'runs:cancel', 'approvals:respond'];

async function until<T>(what: string, fn: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn().catch(() => undefined);
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

interface Engine {
  env: Record<string, string>;
  cleanup(): Promise<void>;
}

describe.each([
  ['the embedded engine', async (): Promise<Engine> => ({ env: {}, cleanup: async () => undefined })],
  [
    'a PostgreSQL server',
    async (): Promise<Engine> => {
      const db = await createScratchDatabase();
      return { env: { DATABASE_URL: db.url }, cleanup: () => db.drop() };
    },
  ],
])('runs: a parent waiting on its child survives a restart (%s)', (_label, makeEngine) => {
  let engine: Engine;
  let dir: string;
  let env: Record<string, string>;
  const procs: ChildProcess[] = [];

  beforeAll(async () => {
    engine = await makeEngine();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'openwop-subwf-'));
    fs.mkdirSync(path.join(dir, 'data'));
    env = { ...engine.env, OPENWOP_DATA_DIR: path.join(dir, 'data'), OPENWOP_TEST_SEAMS: 'true', OPENWOP_CONSOLE: 'false' };
  });

  afterAll(async () => {
    for (const p of procs) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
    await engine?.cleanup();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const host = async (): Promise<HostProcess> => {
    const h = await startHostProcess({ env, scopes: SCOPES });
    procs.push(h.proc);
    return h;
  };

  it('SIGTERM while the child waits: the next host re-attaches the parent to the same child, and both complete', async () => {
    const first = await host();
    // The fixture pair: the parent seeds the child's variable, the child waits on its gate `child-gate`.
    const r = await first.http('POST', '/v1/runs', { body: { workflowId: 'conformance-subworkflow-mid-run-mutation' } });
    expect(r.status).toBe(201);
    const parentId = r.body.runId as string;
    const child = await until('the child waiting on its gate', async () => {
      const p = await first.http('GET', `/v1/runs/${parentId}`);
      const c = p.body.childRuns?.[0];
      return c?.status === 'waiting-approval' && p.body.status === 'waiting-approval' ? (c as { runId: string }) : undefined;
    });
    const [before] = await first.query<{ fence: number }>(`SELECT "fence" FROM "run" WHERE "id" = $1`, [parentId]);
    await first.close();

    const next = await host();
    // The parent is claimed again by the new host (a new fence) and keeps waiting on the same child.
    await until('the parent claimed again', async () => {
      const [row] = await next.query<{ fence: number; lease_owner: string | null }>(`SELECT "fence", "lease_owner" FROM "run" WHERE "id" = $1`, [parentId]);
      return row && row.fence > before.fence && row.lease_owner ? row : undefined;
    });
    expect((await next.http('GET', `/v1/runs/${parentId}`)).body.status).toBe('waiting-approval');
    const resolved = await next.http('POST', `/v1/runs/${child.runId}/interrupts/child-gate`, { body: { resumeValue: { action: 'accept' } } });
    expect(resolved.status).toBeLessThan(300);
    const parent = await until('the parent to finish', async () => {
      const p = await next.http('GET', `/v1/runs/${parentId}`);
      return ['completed', 'failed', 'cancelled'].includes(p.body.status) ? p.body : undefined;
    });
    expect(parent.status).toBe('completed');
    // One child only, the one started before the restart, completed with its seeded variable.
    expect(parent.childRuns).toEqual([expect.objectContaining({ runId: child.runId, status: 'completed', parentNodeId: 'subwf-call' })]);
    const childDone = (await next.http('GET', `/v1/runs/${child.runId}`)).body;
    expect(childDone).toMatchObject({ status: 'completed', parentRunId: parentId, variables: { receivedPrdId: 'seeded-id' } });
    const events = (await next.http('GET', `/v1/runs/${parentId}/events/poll?lastSequence=0`)).body.events as Array<{ type: string; nodeId?: string; payload: Record<string, any> }>; // eslint-disable-line @typescript-eslint/no-explicit-any
    expect(events.some((e) => e.type === 'node.failed')).toBe(false);
    expect(events.filter((e) => e.type === 'node.completed' && e.nodeId === 'subwf-call').map((e) => e.payload.outputs)).toEqual([{ childRunId: child.runId, childStatus: 'completed', childOutputs: { 'child-gate': expect.any(Object) } }]);
    await next.close();
  }, 300_000);
});
