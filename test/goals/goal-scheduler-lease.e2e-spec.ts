/**
 * A scheduler pass on the database clock whose work outlives its claims: the pass's lease (never
 * renewed) runs out, the worker call in flight is aborted, and the pass starts nothing more.
 */
import type { GoalWorkerProvider } from '@openwop-host/plugin-sdk';
import { GoalExtensionsService } from '../../src/capabilities/goals/goal-extensions.service';
import { GoalSchedulerService } from '../../src/capabilities/goals/goal-scheduler.service';
import { GoalsService } from '../../src/capabilities/goals/goals.service';
import { LeaseEndedError } from '../../src/platform/leases/lease-keeper';
import type { Principal } from '../../src/platform/identity/principal';
import { createTestApp, TestApp } from '../support/test-app';
import { goalBody } from './goal-test-kit';

const LEASE_MS = 1000;
/** The pass gives its claims up a tenth of the lease early. */
const GIVEN_UP_AFTER_MS = LEASE_MS - LEASE_MS / 10;

describe('goal scheduler pass that outlives its lease', () => {
  let t: TestApp;
  const starts: Array<{ key: string; abortedAt?: number; reason?: unknown }> = [];
  const worker: GoalWorkerProvider = {
    pollIntervalMs: 100,
    // A runtime that does not answer: the call returns only when its signal aborts.
    start: async (_goal, ctx) => {
      const call: (typeof starts)[number] = { key: ctx.idempotencyKey };
      starts.push(call);
      await new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve(), { once: true }));
      call.abortedAt = Date.now();
      call.reason = ctx.signal.reason;
      throw ctx.signal.reason;
    },
    collect: async (_goal, runId) => ({ runId, status: 'completed', output: {} }),
  };

  beforeAll(async () => {
    // The goal clock stays the database's: the lease is watched in real time.
    t = await createTestApp({ configFile: { goals: { leaseMs: LEASE_MS, batchSize: 10, concurrency: 1 } } });
    t.moduleRef.get(GoalExtensionsService).registerWorker('stalling', worker);
  });

  afterAll(async () => {
    await t?.close();
  });

  it('aborts the worker call in flight when the lease runs out, and starts no other goal of the batch', async () => {
    const owner: Principal = { tenant: 'acme', principal: 'alice', scopes: new Set(['goals:write', 'runs:create']), kind: 'system' };
    const goals = t.moduleRef.get(GoalsService);
    for (let i = 0; i < 3; i++) await goals.create(owner, goalBody({ worker: 'stalling' }));

    const started = Date.now();
    const result = await t.moduleRef.get(GoalSchedulerService).runOnce();
    expect(result.claimed).toBe(3);
    // One lane: the first goal's start hung and was aborted; the two after it were not started.
    expect(starts).toHaveLength(1);
    expect(result.dispatched).toBe(0);
    expect(starts[0].reason).toBeInstanceOf(LeaseEndedError);
    expect(starts[0].reason).toMatchObject({ reason: 'expired' });
    const after = starts[0].abortedAt! - started;
    expect(after).toBeGreaterThanOrEqual(GIVEN_UP_AFTER_MS - 50);
    expect(after).toBeLessThan(GIVEN_UP_AFTER_MS + 1000);
  });
});
