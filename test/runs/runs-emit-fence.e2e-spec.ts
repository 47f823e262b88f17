/**
 * A node's events (`ctx.emit`) are written by the run engine's fenced flush, like everything else
 * the engine writes: a node whose run lease another claim took over (a new owner and fence) cannot
 * append, its emit is refused and nothing lands in the log; under its own lease the same emit lands.
 */
import * as path from 'node:path';
import { RunEngineService } from '../../src/capabilities/runs/engine/run-engine.service';
import type { LateEmitProbe } from '../fixtures/plugins/late-emit-plugin';
import { createTestApp, TestApp } from '../support/test-app';
import { installChains, waitForStatus } from './run-kit';

const plugin = path.join(__dirname, '../fixtures/plugins/late-emit-plugin.ts');

describe('runs: a node emits only under its run lease', () => {
  let t: TestApp;
  let key: string;
  const gates = new Map<string, () => void>();
  const started = new Map<string, () => void>();
  const outcomes = new Map<string, { eventId?: string; error?: string }>();
  const reported = new Map<string, () => void>();

  beforeAll(async () => {
    (globalThis as { __lateEmit?: LateEmitProbe }).__lateEmit = {
      gate: (runId) =>
        new Promise<void>((resolve) => {
          gates.set(runId, resolve);
          started.get(runId)?.();
        }),
      report: (runId, outcome) => {
        outcomes.set(runId, outcome);
        reported.get(runId)?.();
      },
    };
    // A long lease: no renewal (every third of it) notices the takeover before the node emits.
    t = await createTestApp({ env: { OPENWOP_PLUGINS: plugin }, configFile: { runs: { leaseMs: 30_000, claimIntervalMs: 100 } } });
    key = await t.key({ scopes: ['runs:create', 'runs:read', 'runs:cancel'] });
    await installChains(t, 'default', 'vendor.test.emit-fence', {
      'vendor.test.emit-late': { nodes: [{ id: 'late', typeId: 'vendor.test.late-emit', config: {} }], edges: [] },
    });
  });

  afterAll(async () => {
    await t?.close();
    delete (globalThis as { __lateEmit?: LateEmitProbe }).__lateEmit;
  });

  /** Starts a run and answers once its node waits at the gate. */
  async function startAtGate(): Promise<string> {
    const r = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.test.emit-late' } });
    expect(r.status).toBe(201);
    const runId = r.body.runId as string;
    if (!gates.has(runId)) await new Promise<void>((resolve) => started.set(runId, resolve));
    return runId;
  }

  async function release(runId: string): Promise<{ eventId?: string; error?: string }> {
    const done = new Promise<void>((resolve) => reported.set(runId, resolve));
    gates.get(runId)!();
    await done;
    return outcomes.get(runId)!;
  }

  const lateEvents = async (runId: string) =>
    (await t.ds.query(`SELECT "id" FROM "event" WHERE "stream_key" = (SELECT "key" FROM "event_stream" WHERE "stream_id" = $1) AND "type" = 'vendor.test.late'`, [runId])) as Array<{ id: string }>;

  it('under its own lease, the emitted event lands in the run log', async () => {
    const runId = await startAtGate();
    const outcome = await release(runId);
    expect(outcome.error).toBeUndefined();
    await waitForStatus(t, key, runId, ['completed']);
    expect((await lateEvents(runId)).map((e) => e.id)).toEqual([outcome.eventId]);
  });

  it('after another claim took the lease over (new owner and fence), the emit is refused and nothing lands', async () => {
    const runId = await startAtGate();
    const engine = t.app.get(RunEngineService);
    const before = (await t.ds.query(`SELECT "last_sequence" FROM "event_stream" WHERE "stream_id" = $1`, [runId])) as Array<{ last_sequence: string }>;
    // Another replica's claim, as if this one had stalled past its lease.
    await t.ds.query(`UPDATE "run" SET "lease_owner" = 'another-replica', "fence" = "fence" + 1, "lease_expires_at" = now() + interval '1 hour' WHERE "id" = $1`, [runId]);
    const outcome = await release(runId);
    expect(outcome.eventId).toBeUndefined();
    expect(outcome.error).toMatch(/lease/i);
    const until = Date.now() + 5000;
    while (engine.activeCount() > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
    expect(engine.activeCount()).toBe(0);
    expect(await lateEvents(runId)).toEqual([]);
    // Nothing at all was appended under the lost claim: the stream's counter did not move.
    const after = (await t.ds.query(`SELECT "last_sequence" FROM "event_stream" WHERE "stream_id" = $1`, [runId])) as Array<{ last_sequence: string }>;
    expect(after).toEqual(before);
    const [row] = (await t.ds.query(`SELECT "lease_owner" FROM "run" WHERE "id" = $1`, [runId])) as Array<{ lease_owner: string }>;
    expect(row.lease_owner).toBe('another-replica');
    await t.ds.query(`UPDATE "run" SET "status" = 'cancelled', "lease_owner" = NULL, "lease_expires_at" = NULL WHERE "id" = $1`, [runId]);
  });
});
