import { HostSchemaJudge } from './host-schema.judge';

const goal = { goalId: 'g', tenant: 't', objective: 'o', iteration: 1, criteria: { $id: 'urn:x', type: 'object', required: ['green'], properties: { green: { const: true } } } };

describe('HostSchemaJudge', () => {
  const judge = new HostSchemaJudge();

  it('is satisfied only by a successful run whose output validates against the criteria', () => {
    expect(judge.evaluate({ goal, run: { runId: 'r', status: 'completed', output: { green: true } } })).toEqual({ satisfied: true, confidence: 1 });
    expect(judge.evaluate({ goal, run: { runId: 'r', status: 'reported', output: { green: true } } })).toEqual({ satisfied: true, confidence: 1 });
    expect(judge.evaluate({ goal, run: { runId: 'r', status: 'completed', output: { green: false } } }).satisfied).toBe(false);
    expect(judge.evaluate({ goal, run: { runId: 'r', status: 'failed', output: { green: true } } }).satisfied).toBe(false);
    expect(judge.evaluate({ goal, run: { runId: 'r', status: 'completed' } }).satisfied).toBe(false);
    expect(judge.evaluate({ goal: { ...goal, criteria: undefined }, run: { runId: 'r', status: 'completed', output: {} } }).satisfied).toBe(false);
  });

  it('compiles criteria that carry an $id more than once without clashing', () => {
    expect(judge.evaluate({ goal: { ...goal, criteria: { ...goal.criteria, description: 'other' } }, run: { runId: 'r', status: 'completed', output: { green: true } } }).satisfied).toBe(true);
  });

  it('names the error of criteria that are no JSON Schema', () => {
    expect(judge.compileError({ type: 'nonsense' })).toEqual({ path: '/type', message: expect.any(String) });
    expect(judge.compileError({ type: 'object' })).toBeUndefined();
  });

  it('refuses criteria whose pattern needs backtracking, and matches the others without it', () => {
    expect(judge.compileError({ type: 'string', pattern: '^(a)\\1$' })).toEqual({ path: '/pattern', message: expect.stringMatching(/backreference/) });
    const redos = { ...goal, criteria: { type: 'string', pattern: '^(a|a)*$' } };
    const started = performance.now();
    expect(judge.evaluate({ goal: redos, run: { runId: 'r', status: 'completed', output: `${'a'.repeat(40)}!` } }).satisfied).toBe(false);
    expect(performance.now() - started).toBeLessThan(1000);
    expect(judge.evaluate({ goal: redos, run: { runId: 'r', status: 'completed', output: 'aaaa' } }).satisfied).toBe(true);
  });
});
