/**
 * The conformance fixtures of replay (served, and listed in discovery `fixtures[]`, only with the test seams on;
 * CONFORMANCE_FIXTURES spreads them). Shapes follow the official `conformance/fixtures/*.json`, in the host's DAG form.
 */
export const REPLAY_FIXTURES: Record<string, Record<string, unknown>> = {
  // v2-replay-suppression-ordinal (replay.md §Suppression rule 2, openwop#1718): start -> effect -> wait -> back to
  // effect over any_success edges, so `effect` (side-effecting) executes once per loop, twice in all
  // (settings.maxLoopbackIterations 2; a third loop-back fails the run loop_limit_exceeded). `wait` holds for
  // inputs.delayMs (none: no wait). A replay fork resolves each execution of `effect` from the source's execution of
  // the same ordinal and fails one the source never finished closed with replay_source_missing.
  'conformance-replay-ordinal-loop': {
    nodes: [
      { id: 'start', typeId: 'core.noop', config: {} },
      { id: 'effect', typeId: 'core.conformance.side-effect', config: {} },
      { id: 'wait', typeId: 'core.conformance.hold', config: { delayMs: '{{inputs.delayMs}}' } },
    ],
    edges: [
      { from: 'start', to: 'effect', triggerRule: 'any_success' },
      { from: 'effect', to: 'wait' },
      { from: 'wait', to: 'effect', triggerRule: 'any_success' },
    ],
    settings: { maxLoopbackIterations: 2 },
  },
};
