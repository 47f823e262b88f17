import 'reflect-metadata';
import { ToolCallResult, ToolDescriptor, ToolInvocationContext, ToolSession, ToolSource, ToolSourceProvider } from './tool-source';
import { checkToolSourceContract, toolDescriptorProblems } from './tool-source-contract';

const GREET: ToolDescriptor = {
  toolId: 'x-host-kit-tools.greet',
  source: 'host-extension',
  title: 'Greet',
  safetyTier: 'pure',
  replayPolicy: 'deterministic',
  auth: { scopes: ['tools:kit'] },
  inputSchema: { type: 'object', required: ['name'], properties: { name: { type: 'string' } } },
};

@ToolSource({ source: 'host-extension', name: 'kit.tools' })
class Good implements ToolSourceProvider {
  seen: ToolInvocationContext[] = [];
  closed = 0;
  async listTools(): Promise<ToolDescriptor[]> {
    return [GREET];
  }
  sampleArguments(): Record<string, unknown> {
    return { name: 'Ada' };
  }
  projects(): boolean {
    return true;
  }
  async openSession(_toolId: string, ctx: ToolInvocationContext): Promise<ToolSession> {
    this.seen.push(ctx);
    return {
      call: async (args): Promise<ToolCallResult> => (typeof args.name === 'string' ? { status: 'ok', content: { greeting: `Hello, ${args.name}!` } } : { status: 'error', error: { code: 'bad_args', message: 'name needed' } }),
      close: async () => void this.closed++,
    };
  }
}

@ToolSource({ source: 'host-extension', name: 'Kit Tools' })
class Sloppy implements ToolSourceProvider {
  private n = 0;
  async listTools(): Promise<ToolDescriptor[]> {
    this.n++;
    return [
      { toolId: 'kit.greet', source: 'mcp', safetyTier: 'exec', auth: { scopes: ['a', 'a'], token: 'x' } as never, extra: 1 } as unknown as ToolDescriptor,
      { ...GREET, title: `Greet ${this.n}` },
      { ...GREET },
    ];
  }
  sampleArguments(): Record<string, unknown> {
    return {};
  }
  async openSession(): Promise<ToolSession> {
    return {
      call: async () => ({ status: 'weird', costUsd: -1 }) as unknown as ToolCallResult,
      close: async () => {
        throw new Error('cannot close');
      },
    };
  }
}

class Undecorated implements ToolSourceProvider {
  async listTools(): Promise<ToolDescriptor[]> {
    return [];
  }
}

describe('checkToolSourceContract', () => {
  it('passes a conforming source: listed, stable, called with its sample arguments and closed', async () => {
    const good = new Good();
    const report = await checkToolSourceContract(good);
    expect(report.problems).toEqual([]);
    expect(report.tools.map((d) => d.toolId)).toEqual(['x-host-kit-tools.greet']);
    expect(report.calls).toEqual([{ toolId: 'x-host-kit-tools.greet', args: { name: 'Ada' }, result: { status: 'ok', content: { greeting: 'Hello, Ada!' } } }]);
    expect(good.closed).toBe(1);
    // The caller holds what the tool asks for, in the listing's tenant.
    expect(good.seen[0]).toMatchObject({ tenant: 'contract-tenant', principal: 'contract-principal' });
    expect([...good.seen[0].scopes]).toEqual(['tools:kit']);
  });

  it('checks an expected error answer and the required arguments of explicit calls', async () => {
    const report = await checkToolSourceContract(new Good(), {
      calls: [
        { toolId: 'x-host-kit-tools.greet', args: {}, expect: 'error' },
        { toolId: 'x-host-kit-tools.greet', args: { name: 'Bo' }, expect: 'error' },
        { toolId: 'x-host-kit-tools.unknown', args: {} },
      ],
    });
    expect(report.problems).toEqual([
      'x-host-kit-tools.greet: the arguments lack "name", which its inputSchema requires',
      'x-host-kit-tools.greet: call() answered ok, expected error',
      'x-host-kit-tools.unknown: not in the listing, so no session would be opened for it',
    ]);
  });

  it('names every violation of a sloppy source', async () => {
    const { problems } = await checkToolSourceContract(new Sloppy());
    expect(problems).toEqual(
      expect.arrayContaining([
        '@ToolSource name "Kit Tools" must match /^[a-z0-9][a-z0-9._-]*$/',
        'kit.greet: unknown key "extra" (descriptors are closed)',
        'kit.greet: source must be "host-extension" (the kind of the source that lists it)',
        'kit.greet: an exec-tier tool must come from host-extension',
        'kit.greet: auth carries "token": only scopes and credentialRef (never credential material)',
        'kit.greet: auth.scopes must be distinct strings',
        'x-host-kit-tools.greet: listed twice',
        'a second listTools() answered different descriptors: tool ids and descriptors must be stable across reads',
        'x-host-kit-tools.greet: the arguments lack "name", which its inputSchema requires',
        'x-host-kit-tools.greet: call() must answer { status: "ok" | "error" }',
        'x-host-kit-tools.greet: close() rejected: cannot close',
      ]),
    );
    expect((await checkToolSourceContract(new Undecorated())).problems).toEqual(['the class is not decorated with @ToolSource({ source, name })']);
  });

  it('checks descriptors one by one', () => {
    expect(toolDescriptorProblems(GREET, 'host-extension')).toEqual([]);
    expect(toolDescriptorProblems({ ...GREET, toolId: 'greet' }, 'host-extension')).toEqual(['greet: a host-extension tool id must start with x-host-<vendor>-']);
    expect(toolDescriptorProblems({ toolId: 'mcp:a b', source: 'mcp' }, 'mcp')).toEqual([
      'mcp:a b: toolId must be 1-512 characters without whitespace, "/", "\\", "?", "#" or "%"',
      'mcp:a b: safetyTier is required',
    ]);
    expect(toolDescriptorProblems([], 'mcp')).toEqual(['a descriptor must be an object']);
  });
});
