import type { DiscoveryService } from '@nestjs/core';
import type { GoalWorkerProvider } from '@openwop-host/plugin-sdk';
import { DomainError } from '../../platform/errors/domain-error';
import { GoalExtensionsService } from './goal-extensions.service';
import { GoalWorkerSelector } from './goal-worker-selector.service';
import { goalsSettings } from './goals.settings';

const plain = (): GoalWorkerProvider => ({ start: async () => ({ runId: 'r' }), collect: async () => undefined });
const probing = (): GoalWorkerProvider => ({ ...plain(), probe: async () => ({ state: null }) });

function selector(workers: Record<string, GoalWorkerProvider>, goals: Record<string, unknown> = {}): GoalWorkerSelector {
  const ext = new GoalExtensionsService({ getProviders: () => [] } as unknown as DiscoveryService);
  ext.onApplicationBootstrap();
  for (const [id, w] of Object.entries(workers)) ext.registerWorker(id, w);
  return new GoalWorkerSelector(ext, goalsSettings({ file: { goals } }));
}

function refusal(fn: () => unknown): { status: number; code: string } | undefined {
  try {
    fn();
    return undefined;
  } catch (e) {
    return { status: (e as DomainError).status, code: (e as DomainError).code };
  }
}

describe('GoalWorkerSelector', () => {
  const target = { tenant: 't' };

  it('serves manual always, schedule and commitment with any worker, heartbeat only with a predicate', () => {
    expect(selector({}).servedModes()).toEqual(['manual']);
    expect(selector({ a: plain() }).servedModes()).toEqual(['schedule', 'commitment', 'manual']);
    expect(selector({ a: plain(), b: probing() }).servedModes()).toEqual(['schedule', 'commitment', 'heartbeat', 'manual']);
    expect(selector({ a: plain(), b: probing() }).workersFor('heartbeat')).toEqual(['b']);
  });

  it('chooses the named worker, else the configured default, else openwop-runtime, else the only one serving the mode', () => {
    const s = selector({ a: plain(), b: probing(), 'openwop-runtime': plain() });
    expect(s.choose('schedule', 'a', target)).toBe('a');
    expect(s.choose('schedule', undefined, target)).toBe('openwop-runtime');
    expect(s.choose('heartbeat', undefined, target)).toBe('b');
    expect(selector({ a: plain(), b: plain() }, { defaultWorker: 'b' }).choose('commitment', undefined, target)).toBe('b');
    expect(refusal(() => selector({ a: plain(), b: plain() }).choose('schedule', undefined, target))).toEqual({ status: 422, code: 'worker_unavailable' });
    expect(refusal(() => selector({ a: plain() }).choose('heartbeat', 'a', target))).toEqual({ status: 422, code: 'worker_unavailable' });
    expect(refusal(() => selector({ a: plain() }).choose('schedule', 'nobody', target))).toEqual({ status: 422, code: 'worker_unavailable' });
  });

  it('defaults to local-run for a goal naming a workflow when no remote runtime is configured', () => {
    const local: GoalWorkerProvider = { ...plain(), accepts: (g) => (g.workflowId ? undefined : 'the goal names no workflowId') };
    const wf = { ...target, workflowId: 'wf-1' };
    expect(selector({ 'local-run': local, a: plain() }).choose('schedule', undefined, wf)).toBe('local-run');
    expect(selector({ 'local-run': local, 'openwop-runtime': plain() }).choose('schedule', undefined, wf)).toBe('openwop-runtime');
    expect(selector({ 'local-run': local, a: plain() }, { defaultWorker: 'a' }).choose('schedule', undefined, wf)).toBe('a');
    // A goal naming no workflow: the only other worker, else the local worker's refusal.
    expect(selector({ 'local-run': local, a: plain() }).choose('schedule', undefined, target)).toBe('a');
    expect(refusal(() => selector({ 'local-run': local }).choose('schedule', undefined, target))).toEqual({ status: 422, code: 'worker_rejected' });
    expect(refusal(() => selector({ 'local-run': local, a: plain(), b: plain() }).choose('schedule', undefined, target))).toEqual({ status: 422, code: 'worker_unavailable' });
  });

  it('lets a worker refuse a goal it cannot serve', () => {
    const chains: GoalWorkerProvider = { ...plain(), accepts: (g) => (g.workflowId ? undefined : 'the goal names no workflowId') };
    const s = selector({ chains });
    expect(refusal(() => s.choose('schedule', 'chains', target))).toEqual({ status: 422, code: 'worker_rejected' });
    expect(s.choose('schedule', 'chains', { ...target, workflowId: 'wf-1' })).toBe('chains');
  });
});
