import { failureRouted, readiness, SourceOutcome, TriggerRule } from './edge-rules';
import type { WorkflowDefinition } from '../workflow-definition';

/** One target `t` fed by sources a and b, both edges carrying `rule`. */
const fanIn = (rule?: TriggerRule): WorkflowDefinition => ({
  workflowId: 'w',
  nodes: ['a', 'b', 't'].map((id) => ({ id, typeId: 'core.noop', config: {} })),
  edges: [
    { from: 'a', to: 't', ...(rule ? { triggerRule: rule } : {}) },
    { from: 'b', to: 't', ...(rule ? { triggerRule: rule } : {}) },
  ],
});
const at = (rule: TriggerRule | undefined, a: SourceOutcome, b: SourceOutcome) => readiness(fanIn(rule), 't', (s) => (s === 'a' ? a : b));

describe('edge trigger rules (RFC 0125, RFC 0223)', () => {
  it.each([
    // rule, a, b, readiness
    [undefined, 'completed', 'completed', 'ready'],
    [undefined, 'completed', undefined, 'wait'],
    [undefined, 'failed', undefined, 'never'],
    ['all_success', 'completed', 'skipped', 'never'],
    ['any_success', undefined, 'completed', 'ready'],
    ['any_success', 'failed', undefined, 'wait'],
    ['any_success', 'failed', 'skipped', 'never'],
    ['all_complete', 'failed', 'completed', 'ready'],
    ['all_complete', 'failed', undefined, 'wait'],
    ['none_failed', 'completed', 'skipped', 'ready'],
    ['none_failed', 'failed', undefined, 'never'],
    ['any_failed', 'failed', undefined, 'ready'],
    ['any_failed', 'completed', undefined, 'wait'],
    ['any_failed', 'completed', 'completed', 'never'],
  ] as const)('%s with sources %s / %s: %s', (rule, a, b, want) => {
    expect(at(rule, a, b)).toBe(want);
  });

  it('needs every group of a mixed fan-in, and never fires once one group cannot', () => {
    const def: WorkflowDefinition = {
      workflowId: 'w',
      nodes: ['a', 'b', 't'].map((id) => ({ id, typeId: 'core.noop', config: {} })),
      edges: [{ from: 'a', to: 't', triggerRule: 'any_failed' }, { from: 'b', to: 't' }],
    };
    expect(readiness(def, 't', (s) => (s === 'a' ? 'failed' : 'completed'))).toBe('ready');
    expect(readiness(def, 't', (s) => (s === 'a' ? 'failed' : undefined))).toBe('wait');
    expect(readiness(def, 't', (s) => (s === 'a' ? 'completed' : 'completed'))).toBe('never');
  });

  it('routes a failure only over an edge that admits a failed source', () => {
    const def = (rule?: TriggerRule): WorkflowDefinition => ({ workflowId: 'w', nodes: [], edges: [{ from: 'gate', to: 'next', ...(rule ? { triggerRule: rule } : {}) }] });
    expect([undefined, 'all_success', 'any_success', 'none_failed', 'all_complete', 'any_failed'].map((r) => failureRouted(def(r as TriggerRule), 'gate'))).toEqual([false, false, false, false, true, true]);
    expect(failureRouted(def('any_failed'), 'next')).toBe(false);
  });
});
