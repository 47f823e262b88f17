import { NodeExecutionContext, NodeExecutionError, NodeExecutorProvider } from '@openwop-host/plugin-sdk';
import { retryPolicyOf, retryPolicyProblems, withRetries } from './node-retry';

function ctxOf(config: Record<string, unknown>, emitted: Array<[string, Record<string, unknown>]>, signal = new AbortController().signal): NodeExecutionContext {
  return { runId: 'r1', nodeId: 'n1', config, signal, emit: async (type: string, payload: Record<string, unknown>) => (emitted.push([type, payload]), { eventId: 'e' }), principal: { tenant: 't' } } as unknown as NodeExecutionContext;
}

describe('node retry policy (RFC 0009) and dead-lettering (RFC 0053)', () => {
  it('checks the policy', () => {
    expect(retryPolicyProblems({})).toEqual([]);
    expect(retryPolicyOf({ retry: { maxAttempts: 2 } })).toEqual({ maxAttempts: 2, backoffMs: 0 });
    expect(retryPolicyProblems({ retry: { maxAttempts: 0, backoffMs: -1, jitter: 1 } })).toHaveLength(3);
    expect(retryPolicyProblems({ retry: [] })).toHaveLength(1);
  });

  it('retries until it succeeds, and runs a policy-less node once', async () => {
    let calls = 0;
    const flaky: NodeExecutorProvider = { execute: async () => (++calls < 3 ? Promise.reject(new NodeExecutionError('down', 'down')) : { outputs: { ok: true } }) };
    const recorded: unknown[] = [];
    const ex = withRetries(flaky, { record: async (_c, l) => void recorded.push(l) });
    const emitted: Array<[string, Record<string, unknown>]> = [];
    expect(await ex.execute(ctxOf({ retry: { maxAttempts: 3 } }, emitted))).toEqual({ outputs: { ok: true } });
    expect(emitted.map(([t, p]) => [t, p.attempt])).toEqual([['node.retried', 2], ['node.retried', 3]]);
    expect(recorded).toEqual([]);
    calls = 0;
    await expect(ex.execute(ctxOf({}, emitted))).rejects.toThrow('down');
    expect(calls).toBe(1);
  });

  it('dead-letters when the attempts are exhausted; never retries a non-node failure or a stopped node', async () => {
    let calls = 0;
    const failing: NodeExecutorProvider = { execute: async () => (calls++, Promise.reject(new NodeExecutionError('down', 'secret detail'))) };
    const recorded: unknown[] = [];
    const ex = withRetries(failing, { record: async (_c, l) => void recorded.push(l) });
    const emitted: Array<[string, Record<string, unknown>]> = [];
    await expect(ex.execute(ctxOf({ retry: { maxAttempts: 2 } }, emitted))).rejects.toThrow('secret detail');
    expect(emitted.map(([t]) => t)).toEqual(['node.retried', 'run.dead_lettered']);
    expect(emitted[1][1]).toEqual({ runId: 'r1', nodeId: 'n1', reason: 'down', attempts: 2 });
    expect(recorded).toEqual([{ nodeId: 'n1', reason: 'down', attempts: 2 }]);

    calls = 0;
    const engine = withRetries({ execute: async () => (calls++, Promise.reject(new Error('engine'))) }, { record: async () => undefined });
    await expect(engine.execute(ctxOf({ retry: { maxAttempts: 3 } }, []))).rejects.toThrow('engine');
    expect(calls).toBe(1);
    calls = 0;
    const stopped = new AbortController();
    stopped.abort();
    await expect(ex.execute(ctxOf({ retry: { maxAttempts: 3 } }, [], stopped.signal))).rejects.toThrow();
    expect(calls).toBe(1);
  });

  it('adds the policy checks to the executor config checks', () => {
    const ex = withRetries({ execute: async () => ({ outputs: {} }), validateConfig: (c) => (c.x ? ['x'] : []) }, { record: async () => undefined });
    expect(ex.validateConfig!({ x: 1, retry: { maxAttempts: 99 } })).toEqual(['x', expect.stringMatching(/maxAttempts/)]);
  });
});
