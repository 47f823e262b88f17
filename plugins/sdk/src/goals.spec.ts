import { checkGoalWorkerContract, GoalRunOutcome, GoalWorkerProvider } from './goals';

function worker(over: Partial<GoalWorkerProvider> & { dedupe?: boolean } = {}): GoalWorkerProvider {
  const byKey = new Map<string, string>();
  let n = 0;
  return {
    pollIntervalMs: 1,
    async start(_g, ctx) {
      if (over.dedupe === false) return { runId: `run-${++n}` };
      if (!byKey.has(ctx.idempotencyKey)) byKey.set(ctx.idempotencyKey, `run-${++n}`);
      return { runId: byKey.get(ctx.idempotencyKey)! };
    },
    async collect(_g, runId): Promise<GoalRunOutcome | undefined> {
      return { runId, status: 'completed', costUsd: 0.1 };
    },
    ...over,
  };
}

describe('checkGoalWorkerContract', () => {
  it('passes a worker that honours idempotency keys and reports terminal outcomes', async () => {
    expect(await checkGoalWorkerContract(worker())).toEqual([]);
  });

  it('flags a worker that starts a second run for the same key', async () => {
    expect((await checkGoalWorkerContract(worker({ dedupe: false })))[0]).toMatch(/same idempotency key/);
  });

  it('flags a run that never finishes and a nonsensical cost', async () => {
    expect(await checkGoalWorkerContract(worker({ collect: async () => undefined }), { maxCollects: 3 })).toEqual([expect.stringMatching(/never reported/)]);
    expect(await checkGoalWorkerContract(worker({ collect: async (_g, runId) => ({ runId, status: 'completed', costUsd: -1 }) }))).toEqual([expect.stringMatching(/costUsd/)]);
  });
});
