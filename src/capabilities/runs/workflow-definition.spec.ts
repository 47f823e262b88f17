import { nodeInputs, parseDefinition, sinks, templateConfig } from './workflow-definition';

describe('workflow definition', () => {
  it('orders nodes topologically and finds the sinks', () => {
    const { definition, problems } = parseDefinition('w', {
      nodes: [{ id: 'c', typeId: 'core.noop' }, { id: 'a', typeId: 'core.noop' }, { id: 'b', typeId: 'core.noop' }],
      edges: [{ from: 'a', to: 'b' }, { from: 'b', to: 'c' }],
    });
    expect(problems).toEqual([]);
    expect(definition!.nodes.map((n) => n.id)).toEqual(['a', 'b', 'c']);
    expect(sinks(definition!).map((n) => n.id)).toEqual(['c']);
  });

  it('refuses cycles, unknown endpoints, duplicate ids and edge conditions', () => {
    expect(parseDefinition('w', { nodes: [{ id: 'a', typeId: 'x' }, { id: 'b', typeId: 'x' }], edges: [{ from: 'a', to: 'b' }, { from: 'b', to: 'a' }] }).problems[0].message).toMatch(/cycle/);
    expect(parseDefinition('w', { nodes: [{ id: 'a', typeId: 'x' }], edges: [{ from: 'a', to: 'zz' }] }).problems[0].message).toMatch(/unknown node/);
    expect(parseDefinition('w', { nodes: [{ id: 'a', typeId: 'x' }, { id: 'a', typeId: 'x' }] }).problems[0].message).toMatch(/duplicate/);
    expect(parseDefinition('w', { nodes: [{ id: 'a', typeId: 'x' }, { id: 'b', typeId: 'x' }], edges: [{ from: 'a', to: 'b', condition: 'true' }] }).problems[0].path).toBe('/dag/edges/0/condition');
    expect(parseDefinition('w', { nodes: [] }).problems).toHaveLength(1);
  });

  it('passes outputs along edges, by node and by port', () => {
    const { definition } = parseDefinition('w', {
      nodes: [{ id: 'a', typeId: 'x' }, { id: 'b', typeId: 'x' }, { id: 'c', typeId: 'x' }],
      edges: [{ from: 'a', to: 'c' }, { from: 'b.value', to: 'c.in' }],
    });
    const outputs = new Map([['a', { x: 1 }], ['b', { value: 'v' }]]);
    expect(nodeInputs(definition!, 'c', outputs)).toEqual({ a: { x: 1 }, in: 'v' });
  });

  it('templates config from run inputs and upstream outputs, keeping JSON types for whole placeholders', () => {
    const ctx = { inputs: { n: 3, who: 'ada' }, nodes: { a: { list: [1, 2] } } };
    expect(templateConfig({ ms: '{{inputs.n}}', greet: 'hi {{ params.who }}!', l: '{{nodes.a.list}}', s: 'x{{nodes.a.list}}', miss: '{{inputs.nope}}' }, ctx)).toEqual({
      ms: 3,
      greet: 'hi ada!',
      l: [1, 2],
      s: 'x[1,2]',
      miss: undefined,
    });
  });
});
