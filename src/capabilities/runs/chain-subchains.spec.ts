import { asDispatched, mintChildWorkflowId, subChainProblems, withChildWorkflowIds } from './chain-subchains';

const node = (ref: string) => ({ id: `call-${ref}`, typeId: 'core.subWorkflow', config: { subChainRef: ref } });
const chain = (chainId: string, refs: string[], declared = refs) => ({
  chainId,
  version: '1.0.0',
  subChains: declared.map((ref) => ({ ref })),
  dag: { nodes: refs.length ? refs.map(node) : [{ id: 'leaf', typeId: 'core.noop', config: {} }] },
});
const none = async () => false;

describe('sub-chain composition checks (RFC 0133)', () => {
  it('mints a tenant-scoped, version-pinned child id, slugging dots and unsafe characters', () => {
    expect(mintChildWorkflowId('tenant-a', 'lesson.batch', '1.0.0')).toBe('wfc_tenant-a__lesson_batch__1_0_0');
    expect(mintChildWorkflowId('tenant b', 'x', '2.0.0-rc.1')).toBe('wfc_tenant_b__x__2_0_0-rc_1');
    expect(mintChildWorkflowId('a', 'c', '1.0.0')).not.toBe(mintChildWorkflowId('b', 'c', '1.0.0'));
  });

  it('accepts a pack whose chains compose siblings (a shared child, a chain of depth 2)', async () => {
    const pack = { chains: [chain('p', ['m', 'leaf']), chain('m', ['leaf']), chain('leaf', [])] };
    expect(await subChainProblems(pack, none)).toEqual([]);
  });

  it('refuses an undeclared or missing reference (sub_chain_unresolved), and an external one not installed', async () => {
    const pack = { chains: [chain('p', ['ghost'], ['ghost']), chain('q', ['p'], [])] };
    const problems = await subChainProblems(pack, none);
    expect(problems.map((p) => [p.code, p.path])).toEqual([
      ['sub_chain_unresolved', '/chains/0/subChains'],
      ['sub_chain_unresolved', '/chains/1/dag/nodes/0/config/subChainRef'],
    ]);
    const external = { chains: [{ chainId: 'p', subChains: [{ ref: { packName: 'vendor.x', chainId: 'vendor.x.c', version: '^1' } }], dag: { nodes: [node('vendor.x.c')] } }] };
    expect((await subChainProblems(external, none)).map((p) => p.code)).toEqual(['sub_chain_unresolved']);
    expect(await subChainProblems(external, async (id) => id === 'vendor.x.c')).toEqual([]);
  });

  it('refuses a chain that composes itself, directly or through others (sub_chain_cycle), once per cycle', async () => {
    expect((await subChainProblems({ chains: [chain('a', ['a'])] }, none)).map((p) => p.code)).toEqual(['sub_chain_cycle']);
    const problems = await subChainProblems({ chains: [chain('a', ['b']), chain('b', ['c']), chain('c', ['a'])] }, none);
    expect(problems.map((p) => p.code)).toEqual(['sub_chain_cycle']);
    expect(problems[0].message).toMatch(/a -> b -> c -> a/);
  });

  it('refuses nesting deeper than the bound (sub_chain_max_depth_exceeded), distinct from a cycle', async () => {
    const ids = Array.from({ length: 5 }, (_, i) => `c${i}`);
    const pack = { chains: ids.map((id, i) => chain(id, i + 1 < ids.length ? [ids[i + 1]] : [])) };
    expect(await subChainProblems(pack, none, 4)).toEqual([]);
    const deeper = await subChainProblems(pack, none, 3);
    expect(deeper.map((p) => [p.code, p.path])).toEqual([['sub_chain_max_depth_exceeded', '/chains/0']]);
  });

  it('rewrites each subChainRef to the child\'s tenant-scoped workflowId; checks the node as that child-run node', () => {
    const dag = { nodes: [node('leaf'), { id: 'n', typeId: 'core.noop', config: { subChainRef: 'not-a-child-run' } }] };
    const out = withChildWorkflowIds(dag, 'acme', (id) => (id === 'leaf' ? '2.1.0' : undefined));
    expect((out.nodes as Array<{ config: Record<string, unknown> }>)[0].config).toEqual({ workflowId: 'wfc_acme__leaf__2_1_0' });
    expect(withChildWorkflowIds({ nodes: [{ id: 'x', typeId: 'core.noop', config: {} }] }, 'acme', () => '1.0.0')).toEqual({ nodes: [{ id: 'x', typeId: 'core.noop', config: {} }] });
    expect(asDispatched('core.subWorkflow', { subChainRef: 'c', waitForCompletion: true })).toEqual({ workflowId: 'wfc_c', waitForCompletion: true });
    expect(asDispatched('core.noop', { subChainRef: 'c' })).toEqual({ subChainRef: 'c' });
  });
});
