import { checkNodeExecutorContract, NodeExecutionContext } from '@openwop-host/plugin-sdk';
import { CoreConformanceHoldExecutor } from './core-conformance-hold.executor';
import { CONFORMANCE_SIDE_EFFECT_KEY, CoreConformanceSideEffectExecutor } from './core-conformance-side-effect.executor';

describe('conformance node types', () => {
  it('core.conformance.hold: waits delayMs, answers its resolved config exactly, validates delayMs, stops on abort', async () => {
    const r = await checkNodeExecutorContract(new CoreConformanceHoldExecutor(), {
      config: { delayMs: 20, label: 'x' },
      invalidConfigs: [{ delayMs: -1 }, { delayMs: 1.5 }, { delayMs: 'soon' }, { delayMs: 25 * 3600 * 1000 }],
      abortConfig: { delayMs: 60_000 },
      abortWithinMs: 500,
    });
    expect(r.problems).toEqual([]);
    expect(r.result).toEqual({ outputs: { delayMs: 20, label: 'x' } });
    const started = Date.now();
    await new CoreConformanceHoldExecutor().execute({ config: { delayMs: 60 }, signal: new AbortController().signal } as unknown as NodeExecutionContext);
    expect(Date.now() - started).toBeGreaterThanOrEqual(60);
    // No delay resolved (an absent input): it completes at once.
    await expect(new CoreConformanceHoldExecutor().execute({ config: {}, signal: new AbortController().signal } as unknown as NodeExecutionContext)).resolves.toEqual({ outputs: {} });
  });

  it('core.conformance.side-effect: one effect through ctx.effect per execution, none without the seam', async () => {
    const calls: string[] = [];
    const effect = (key: string, perform: (id: string) => Promise<unknown>) => (calls.push(key), perform(`id-${calls.length}`));
    const ctx = { config: {}, signal: new AbortController().signal, effect } as unknown as NodeExecutionContext;
    await expect(new CoreConformanceSideEffectExecutor().execute(ctx)).resolves.toEqual({ outputs: { status: 200, effectId: 'id-1' } });
    expect(calls).toEqual([CONFORMANCE_SIDE_EFFECT_KEY]);
    expect((await checkNodeExecutorContract(new CoreConformanceSideEffectExecutor(), { expectErrorCode: 'capability_not_provided' })).problems).toEqual([]);
  });
});
