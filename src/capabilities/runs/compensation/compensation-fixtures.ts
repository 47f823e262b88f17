/**
 * The compensation fixtures (served, like the other conformance fixtures, only while the test seams
 * are on): `n` sample charges in a chain (`core.conformance.charge`), each declaring its refund as its
 * inverse action (`core.conformance.refund`, input from the recorded charge), then a failing node.
 * - `conformance-compensation-n<n>`: the failure triggers the unwind (`exhaustedDisposition: record-outcome`);
 * - `-hold`: an exhausted inverse action holds the plan for an operator (`manual-intervention`);
 * - `-healthy`: no failing node, the run completes, nothing is unwound.
 * The last charge's refund (the first inverse action to run) fails its first `failFirstInverseAttempts`
 * attempts (a run input), so retries of one obligation can be driven.
 * `conformance-compensation-parallel`: charges a, b, c declared in that order run side by side and
 * complete b, c, a (their delays) before the failing node: the unwind follows completion, not declaration.
 * `conformance-compensation-cancel`: a charge, then a long wait; cancelling the run (trigger `run-cancel`) refunds it.
 */
export const COMPENSATION_MAX_NODES = 5;
export const INVERSE_MAX_ATTEMPTS = 3;

function fixture(n: number, variant: 'fail' | 'hold' | 'healthy'): Record<string, unknown> {
  const charges = Array.from({ length: n }, (_, i) => {
    const id = `charge-${i + 1}`;
    const last = i === n - 1;
    return {
      id,
      typeId: 'core.conformance.charge',
      config: { amount: 10 * (i + 1) },
      compensation: {
        nodeTypeId: 'core.conformance.refund',
        inputMapping: { chargeId: `\${nodes.${id}.output.chargeId}`, amount: `\${nodes.${id}.output.amount}`, failFirstAttempts: last ? '${inputs.failFirstInverseAttempts}' : 0 },
      },
    };
  });
  const nodes: Array<Record<string, unknown>> = [...charges];
  if (variant !== 'healthy') nodes.push({ id: 'fail', typeId: 'core.fail', config: { code: 'conformance_forward_failure', message: 'The compensation fixture fails after its charges.' } });
  const edges = nodes.slice(1).map((node, i) => ({ from: nodes[i].id as string, to: node.id as string }));
  return {
    settings: {
      compensation: {
        profileVersion: '1',
        orderingModel: 'reverse-completion',
        triggers: ['node-failure'],
        retry: { maxAttempts: INVERSE_MAX_ATTEMPTS, backoffMs: 10 },
        exhaustedDisposition: variant === 'hold' ? 'manual-intervention' : 'record-outcome',
      },
    },
    nodes,
    edges,
  };
}

export function compensationFixtureId(n: number, variant: 'fail' | 'hold' | 'healthy'): string {
  return `conformance-compensation-n${n}${variant === 'fail' ? '' : `-${variant}`}`;
}

const parallelCharge = (id: string, delayMs: number) => ({
  id,
  typeId: 'core.conformance.charge',
  config: { amount: 5, delayMs },
  compensation: { nodeTypeId: 'core.conformance.refund', inputMapping: { chargeId: `\${nodes.${id}.output.chargeId}`, note: `refund of \${nodes.${id}.output.chargeId}` } },
});

export const COMPENSATION_FIXTURES: Record<string, Record<string, unknown>> = {
  ...Object.fromEntries(Array.from({ length: COMPENSATION_MAX_NODES }, (_, i) => i + 1).flatMap((n) => (['fail', 'hold', 'healthy'] as const).map((v) => [compensationFixtureId(n, v), fixture(n, v)]))),
  'conformance-compensation-parallel': {
    settings: { compensation: { triggers: ['node-failure'], retry: { maxAttempts: 2, backoffMs: 0 } } },
    nodes: [parallelCharge('a', 400), parallelCharge('b', 0), parallelCharge('c', 200), { id: 'fail', typeId: 'core.fail', config: { code: 'conformance_forward_failure' } }],
    edges: [{ from: 'a', to: 'fail' }, { from: 'b', to: 'fail' }, { from: 'c', to: 'fail' }],
  },
  'conformance-compensation-cancel': {
    settings: { compensation: { triggers: ['run-cancel'], onParentCancel: 'continue' } },
    nodes: [parallelCharge('a', 0), { id: 'wait', typeId: 'core.delay', config: { ms: 60_000 } }],
    edges: [{ from: 'a', to: 'wait' }],
  },
};
