import { chainPackProblems, ChainCheckHost } from './chain-pack-checks';

const host: ChainCheckHost = {
  nodeProblems: (typeId, config) => {
    if (typeId === 'core.noop' || typeId === 'core.tool') return [];
    if (typeId === 'core.delay') return typeof config.ms === 'number' && config.ms >= 0 ? [] : [{ path: '', code: 'invalid_node_config', message: 'core.delay needs config.ms >= 0' }];
    if (typeId === 'core.ask') return [{ path: '/schema/type', code: 'invalid_schema', message: 'must be equal to one of the allowed values' }];
    return undefined;
  },
  callsTool: (typeId) => typeId === 'core.tool',
  toolVisible: async (toolId) => toolId === 'x-host-openwop-echo',
};

const pack = (...dags: unknown[]) => ({ chains: dags.map((dag, i) => ({ chainId: `c${i}`, dag })) });

describe('chainPackProblems', () => {
  it('finds nothing in a sound chain (ports, placeholders of upstream nodes, a workflow: tool of the same pack)', async () => {
    const problems = await chainPackProblems(
      pack(
        {
          nodes: [
            { id: 'a', typeId: 'core.tool', config: { toolId: 'x-host-openwop-echo', arguments: { m: '{{inputs.x}}' } } },
            { id: 'b', typeId: 'core.noop', config: { v: '{{ nodes.a.m }}', w: ['{{params.y}} and {{nodes.a}}'] } },
            { id: 'c', typeId: 'core.tool', config: { toolId: 'workflow:c1' } },
            { id: 'd', typeId: 'core.noop', config: { deep: '{{nodes.a.m}}', t: '{{inputs.toolId}}' } },
          ],
          edges: [{ from: 'a.m', to: 'b.in' }, { from: 'b', to: 'c' }, { from: 'c', to: 'd' }],
        },
        { nodes: [{ id: 'x', typeId: 'core.noop' }] },
      ),
      host,
    );
    expect(problems).toEqual([]);
  });

  it('lists every problem, each with its path and code', async () => {
    const problems = await chainPackProblems(
      pack({
        nodes: [
          { id: 'a', typeId: 'vendor.none' },
          { id: 'a', typeId: 'core.delay', config: { ms: -1 } },
          { id: 'b', typeId: 'core.tool', config: { toolId: 'x-missing' } },
          { id: 'c', typeId: 'core.noop', config: { s: '{{inputs.x', t: '{{ inputs.x | upper }}', u: '{{vars.x}}', v: '{{nodes.ghost.x}}', w: '{{nodes.c.x}}', x: '{{nodes.d.y}}' } },
          { id: 'd', typeId: 'core.noop' },
          { typeId: 'core.noop' },
        ],
        edges: [{ from: 'a', to: 'nowhere.port' }, { from: 'b', to: 'c', condition: 'x' }, { from: 'd', to: 'b' }, { from: 'b', to: 'd' }, { to: 'a' }],
      }),
      host,
    );
    const at = (code: string) => problems.filter((p) => p.code === code).map((p) => p.path);
    expect(at('duplicate_node_id')).toEqual(['/chains/0/dag/nodes/1/id']);
    expect(at('invalid_node')).toEqual(['/chains/0/dag/nodes/5']);
    expect(at('unknown_node_type')).toEqual(['/chains/0/dag/nodes/0/typeId']);
    expect(at('invalid_node_config')).toEqual(['/chains/0/dag/nodes/1/config']);
    expect(at('unknown_tool')).toEqual(['/chains/0/dag/nodes/2/config/toolId']);
    expect(at('unknown_edge_endpoint')).toEqual(['/chains/0/dag/edges/0/to']);
    expect(at('unsupported_condition')).toEqual(['/chains/0/dag/edges/1/condition']);
    expect(at('invalid_edge')).toEqual(['/chains/0/dag/edges/4']);
    expect(at('cycle')).toEqual(['/chains/0/dag/edges']);
    expect(problems.find((p) => p.code === 'cycle')?.message).toContain('"b"');
    expect(at('bad_template')).toEqual(['s', 't', 'u', 'v', 'w'].map((k) => `/chains/0/dag/nodes/3/config/${k}`));
  });

  it('a chain whose input schema (parameters) does not compile, and a node config problem at its path in the config', async () => {
    const problems = await chainPackProblems(
      { chains: [{ chainId: 'c0', parameters: { type: 'object', properties: { s: { type: 'string', pattern: '(?=x)' } } }, dag: { nodes: [{ id: 'q', typeId: 'core.ask', config: { schema: { type: 'bogus' } } }] } }] },
      host,
    );
    expect(problems.map((p) => [p.path, p.code])).toEqual([
      ['/chains/0/parameters/properties/s/pattern', 'invalid_schema'],
      ['/chains/0/dag/nodes/0/config/schema/type', 'invalid_schema'],
    ]);
    expect(problems[0].message).toMatch(/lookahead/);
  });

  it('a chain without nodes is empty_chain; a tool named by a placeholder is checked when the node runs', async () => {
    expect((await chainPackProblems(pack({ nodes: [] }), host)).map((p) => p.code)).toEqual(['empty_chain']);
    expect(await chainPackProblems(pack({ nodes: [{ id: 't', typeId: 'core.tool', config: { toolId: '{{inputs.tool}}' } }] }), host)).toEqual([]);
  });
});
