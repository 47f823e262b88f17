/**
 * The dead-letter fixture (served while the test seams are on): one node that always fails
 * `conformance_transient` under a retry policy of 3 attempts, so the run is dead-lettered.
 */
export const DEAD_LETTER_FIXTURES: Record<string, Record<string, unknown>> = {
  'conformance-dead-letter': {
    nodes: [{ id: 'flaky', typeId: 'core.fail', config: { code: 'conformance_transient', message: 'The dead-letter fixture always fails.', retry: { maxAttempts: 3, backoffMs: 10 } } }],
  },
};
