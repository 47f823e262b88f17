import { parseDefinition } from '../workflow-definition';
import { resolveMapping, UnresolvedReference } from './compensation-declaration';

const charge = (extra: Record<string, unknown> = {}) => ({ id: 'a', typeId: 'core.conformance.charge', config: { amount: 1 }, compensation: { nodeTypeId: 'core.conformance.refund', inputMapping: { chargeId: '${nodes.a.output.chargeId}' } }, ...extra });
const problems = (dag: Record<string, unknown>) => parseDefinition('wf', dag).problems.map((p) => `${p.path}: ${p.message}`);

describe('RFC 0151 §B declarations (parsed with the workflow)', () => {
  it('keeps a node\'s inverse action and the policy, its defaults filled in', () => {
    const { definition } = parseDefinition('wf', { settings: { compensation: { triggers: ['node-failure', 'run-cancel'] } }, nodes: [charge(), { id: 'b', typeId: 'core.noop', irreversibleEffect: true }] });
    expect(definition?.nodes[0].compensation).toEqual({ nodeTypeId: 'core.conformance.refund', inputMapping: { chargeId: '${nodes.a.output.chargeId}' } });
    expect(definition?.nodes[1].irreversibleEffect).toBe(true);
    expect(definition?.compensationPolicy).toEqual({ profileVersion: '1', orderingModel: 'reverse-completion', triggers: ['node-failure', 'run-cancel'], exhaustedDisposition: 'record-outcome' });
    // No declaration: the definition is as before (nothing added).
    expect(parseDefinition('wf', { nodes: [{ id: 'x', typeId: 'core.noop' }] }).definition).toEqual({ workflowId: 'wf', nodes: [{ id: 'x', typeId: 'core.noop', config: {} }], edges: [] });
  });

  it('refuses at registration what the host does not implement or cannot resolve', () => {
    expect(problems({ settings: { compensation: { triggers: ['operator-request'] } }, nodes: [charge()] })).toEqual(['/dag/settings/compensation/triggers/0: this host never fires the "operator-request" trigger']);
    expect(problems({ settings: { compensation: { triggers: ['node-failure'], orderingModel: 'dependency-graph', profileVersion: '2', approvalScope: 'all', onParentCancel: 'pause' } }, nodes: [charge()] })).toHaveLength(4);
    expect(problems({ settings: { compensation: { triggers: [] } }, nodes: [charge()] })).toEqual(['/dag/settings/compensation/triggers: triggers must name at least one trigger']);
    expect(problems({ nodes: [charge({ irreversibleEffect: true })] })).toEqual(['/dag/nodes/0: a node declaring irreversibleEffect cannot also declare compensation']);
    expect(problems({ nodes: [charge({ compensation: { nodeTypeId: 'x', requiresApproval: true } })] })).toEqual(['/dag/nodes/0/compensation/requiresApproval: this host does not gate inverse actions behind approvals; requiresApproval: true is refused']);
    expect(problems({ nodes: [charge({ compensation: { nodeTypeId: 'x', inputMapping: { a: '${nodes.zz.output.p}', b: 'x ${run.id}' } } })] })).toEqual([
      '/dag/nodes/0/compensation/inputMapping/a: ${nodes.zz.output.p} names no node of this workflow',
      '/dag/nodes/0/compensation/inputMapping/b: ${run.id} is neither ${nodes.<nodeId>.output.<port>} nor ${inputs.<name>}',
    ]);
    expect(problems({ nodes: [charge({ compensation: { nodeTypeId: 'x', retry: { maxAttempts: 0 }, extra: 1 } })] })).toEqual([
      '/dag/nodes/0/compensation/extra: extra is not a compensation field',
      '/dag/nodes/0/compensation/retry/maxAttempts: maxAttempts must be an integer from 1 to 10',
    ]);
  });

  it('resolves a mapping from recorded facts: whole references typed, embedded ones as text; an unrecorded fact fails the mint', () => {
    const facts = { inputs: { order: 7 }, outputs: new Map([['a', { chargeId: 'ch_1', amount: 5, meta: { k: 1 } }]]) };
    expect(resolveMapping({ id: '${nodes.a.output.chargeId}', amount: '${nodes.a.output.amount}', note: 'order ${inputs.order}: ${nodes.a.output.meta}', n: 3, list: ['${inputs.order}'] }, facts)).toEqual({
      id: 'ch_1',
      amount: 5,
      note: 'order 7: {"k":1}',
      n: 3,
      list: [7],
    });
    expect(() => resolveMapping({ x: '${nodes.a.output.missing}' }, facts)).toThrow(UnresolvedReference);
    expect(() => resolveMapping({ x: '${inputs.nope}' }, facts)).toThrow(UnresolvedReference);
  });
});
