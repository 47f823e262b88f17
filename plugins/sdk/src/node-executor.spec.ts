import 'reflect-metadata';
import type { NodeMcp } from './mcp';
import { checkNodeExecutorContract, NodeExecutionContext, NodeExecutionError, NodeExecutionResult, NodeExecutor, NodeExecutorProvider, NodeMcpError } from './node-executor';

@NodeExecutor({ typeId: 'vendor.kit.mcp' })
class UsesMcp implements NodeExecutorProvider {
  async execute(ctx: NodeExecutionContext): Promise<NodeExecutionResult> {
    if (!ctx.mcp) throw new NodeExecutionError('capability_not_provided', 'no ctx.mcp');
    return { outputs: { result: await ctx.mcp.callTool({ serverId: 's', name: 'echo', arguments: { text: 'x' } }) } };
  }
}

@NodeExecutor({ typeId: 'vendor.kit.good', replayPolicy: 'deterministic' })
class Good implements NodeExecutorProvider {
  validateConfig(c: Record<string, unknown>): string[] {
    return typeof c.ms === 'number' ? [] : ['ms needed'];
  }
  async execute(ctx: NodeExecutionContext): Promise<NodeExecutionResult> {
    await ctx.emit('vendor.kit.tick', { ms: ctx.config.ms });
    await new Promise<void>((resolve, reject) => {
      if (ctx.signal.aborted) return reject(new NodeExecutionError('aborted', 'aborted'));
      const t = setTimeout(resolve, ctx.config.ms as number);
      ctx.signal.addEventListener('abort', () => {
        clearTimeout(t);
        reject(new NodeExecutionError('aborted', 'aborted'));
      });
    });
    return { outputs: { waited: ctx.config.ms }, costUsd: 0.01 };
  }
}

class Undecorated implements NodeExecutorProvider {
  async execute(): Promise<NodeExecutionResult> {
    return { outputs: {} };
  }
}

@NodeExecutor({ typeId: 'Bad Type', replayPolicy: 'deterministic' })
class Sloppy implements NodeExecutorProvider {
  private n = 0;
  validateConfig(): string[] {
    return [];
  }
  async execute(ctx: NodeExecutionContext): Promise<NodeExecutionResult> {
    await ctx.emit('Tick', { n: 1 });
    await ctx.emit('provider.usage', { provider: 'p', model: 'm', inputTokens: 1, outputTokens: 1, costEstimateUsd: 0.2 });
    // Ignores its signal, answers something new every time and reports its cost a second time.
    await new Promise((r) => setTimeout(r, Number(ctx.config.ms ?? 0)));
    return { outputs: { n: ++this.n }, costUsd: 0.2 };
  }
}

@NodeExecutor({ typeId: 'vendor.kit.mutates' })
class Mutates implements NodeExecutorProvider {
  async execute(ctx: NodeExecutionContext): Promise<NodeExecutionResult> {
    ctx.config.extra = true;
    return { outputs: ctx.config };
  }
}

@NodeExecutor({ typeId: 'vendor.kit.badout' })
class BadOutputs implements NodeExecutorProvider {
  async execute(): Promise<NodeExecutionResult> {
    return { outputs: [1, 2] as unknown as Record<string, unknown>, costUsd: -1 };
  }
}

describe('checkNodeExecutorContract', () => {
  it('passes an executor that validates, reports, stops on abort and repeats itself', async () => {
    const r = await checkNodeExecutorContract(new Good(), { config: { ms: 1 }, invalidConfigs: [{}, { ms: 'x' }], abortConfig: { ms: 60_000 }, abortWithinMs: 500 });
    expect(r.problems).toEqual([]);
    expect(r.result).toEqual({ outputs: { waited: 1 }, costUsd: 0.01 });
    expect(r.events).toEqual([{ type: 'vendor.kit.tick', payload: { ms: 1 } }]);
  });

  it('flags an undecorated class', async () => {
    expect((await checkNodeExecutorContract(new Undecorated())).problems).toEqual([expect.stringMatching(/not decorated/)]);
  });

  it('flags a bad typeId, a lax validateConfig, odd event types, a double cost report, non-determinism and an ignored signal', async () => {
    const { problems } = await checkNodeExecutorContract(new Sloppy(), { config: { ms: 0 }, invalidConfigs: [{ ms: 'x' }], abortConfig: { ms: 300 }, abortWithinMs: 100 });
    for (const p of [/typeId "Bad Type"/, /accepted an invalid config/, /not dotted .* "Tick"/, /reported twice/, /different outputs/, /did not stop within 100 ms/, /already aborted signal/]) {
      expect(problems).toEqual(expect.arrayContaining([expect.stringMatching(p)]));
    }
  });

  it('flags mutation of the config and outputs that are not a JSON object', async () => {
    expect((await checkNodeExecutorContract(new Mutates(), { config: { a: 1 } })).problems).toEqual([expect.stringMatching(/mutated its frozen config/)]);
    expect((await checkNodeExecutorContract(new BadOutputs())).problems).toEqual([expect.stringMatching(/JSON object/), expect.stringMatching(/costUsd must be/)]);
  });

  it('checks an expected error code', async () => {
    expect((await checkNodeExecutorContract(new Good(), { config: { ms: 1 }, expectErrorCode: 'nope' })).problems).toEqual([expect.stringMatching(/resolved, expected a rejection/)]);
  });

  it('hands the executor the ctx.mcp it is given (1.8), none by default', async () => {
    const mcp: NodeMcp = {
      callTool: async (r) => ({ content: [{ type: 'text', text: String(r.arguments?.text) }], _meta: { 'x/k': 1 } }),
      listTools: async () => ({ tools: [] }),
      readResource: async () => ({ contents: [] }),
      serverHealth: async () => ({ state: 'reachable' }),
    };
    const r = await checkNodeExecutorContract(new UsesMcp(), { mcp });
    expect(r.problems).toEqual([]);
    expect(r.result?.outputs).toEqual({ result: { content: [{ type: 'text', text: 'x' }], _meta: { 'x/k': 1 } } });
    expect((await checkNodeExecutorContract(new UsesMcp(), { expectErrorCode: 'capability_not_provided' })).problems).toEqual([]);
  });

  it('NodeMcpError carries the JSON-RPC error as sent and fails the node mcp_error', () => {
    const e = new NodeMcpError({ code: -32602, message: 'bad', data: { x: 1 } });
    expect(e).toBeInstanceOf(NodeExecutionError);
    expect(e.code).toBe('mcp_error');
    expect(e.error).toEqual({ code: -32602, message: 'bad', data: { x: 1 } });
    expect(e.details).toEqual({ service: 'mcp', error: { code: -32602, message: 'bad', data: { x: 1 } } });
  });
});
