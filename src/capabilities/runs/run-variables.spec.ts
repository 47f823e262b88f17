import type { RunEntity } from './run.entity';
import type { RunNodeEntity } from './run-node.entity';
import { linkageOf, runVariables } from './run-variables';

type Run = Pick<RunEntity, 'inputs' | 'definition' | 'metadata'>;
type Node = Pick<RunNodeEntity, 'nodeId' | 'status' | 'outputs'>;

// A node's type is read from the run's definition, not from its row.
const node = (nodeId: string, status: Node['status'], variables?: Record<string, unknown>): Node => ({ nodeId, status, outputs: variables ? { variables } : {} });

describe('a run\'s variable bag', () => {
  it('is {inputs} alone for a run without variables (the v1 answer of every earlier run)', () => {
    const run: Run = { inputs: { x: 1 }, definition: { workflowId: 'w', nodes: [{ id: 'a', typeId: 'core.noop' }], edges: [] }, metadata: {} };
    expect(JSON.stringify(runVariables(run, [node('a', 'completed', { ignored: true })]))).toBe('{"inputs":{"x":1}}');
    expect(runVariables({ inputs: null, definition: null, metadata: {} }, [])).toEqual({ inputs: {} });
  });

  it('folds declared defaults, then create-time seeds, then completed writers in chain order, then overrides', () => {
    const run: Run = {
      inputs: {},
      definition: { nodes: [{ id: 'first', typeId: 'core.setVariable' }, { id: 'second', typeId: 'core.subWorkflow' }, { id: 'third', typeId: 'core.setVariable' }, { id: 'other', typeId: 'core.noop' }], variables: [{ name: 'a', defaultValue: 'default' }, { name: 'b', defaultValue: 'default' }, { name: 'c' }] },
      metadata: { variables: { b: 'seed', s: 'seed' }, variableOverrides: { o: 'override', a: 'override' } },
    };
    const nodes = [
      node('second', 'completed', { w: 'second' }),
      node('first', 'completed', { w: 'first', s: 'first' }),
      node('third', 'running', { w: 'third' }),
      node('other', 'completed', { w: 'noop' }),
      node('gone', 'completed', { w: 'not in the definition' }),
    ];
    expect(runVariables(run, nodes)).toEqual({ a: 'override', b: 'seed', s: 'first', w: 'second', o: 'override', inputs: {} });
  });

  it('never lets a variable shadow the inputs, and skips undefined writes', () => {
    const run: Run = { inputs: { real: true }, definition: { nodes: [{ id: 'n', typeId: 'core.setVariable' }] }, metadata: { variables: { inputs: 'shadow' } } };
    expect(runVariables(run, [node('n', 'completed', { gone: undefined })])).toEqual({ inputs: { real: true } });
  });

  it('reads a child run\'s linkage from its metadata', () => {
    expect(linkageOf({ metadata: { parentRunId: 'p', parentNodeId: 'n' } })).toEqual({ parentRunId: 'p', parentNodeId: 'n' });
    expect(linkageOf({ metadata: { parentRunId: 'p' } })).toEqual({ parentRunId: 'p' });
    expect(linkageOf({ metadata: {} })).toBeUndefined();
  });
});
