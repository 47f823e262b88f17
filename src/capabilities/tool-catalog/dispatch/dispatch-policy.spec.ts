import { SchemaRegistry } from '../../../platform/schemas/schema-registry';
import { decideDispatch, DispatchDecision, effectivePolicy, SAFETY_TIERS, toolRule } from './dispatch-policy';

const tool = (toolId: string, safetyTier: 'pure' | 'read' | 'write' | 'exec', approval?: 'never' | 'conditional' | 'always') => ({ toolId, safetyTier, approval });

describe('governed dispatch: the decision function', () => {
  it('allows everything and records nothing when no policy is configured', () => {
    const p = effectivePolicy(undefined, undefined, 0);
    expect(p).toEqual({ revision: 0, source: 'default', tiers: { pure: 'allow', read: 'allow', write: 'allow', exec: 'allow' }, tools: {} });
    for (const tier of SAFETY_TIERS) {
      expect(decideDispatch(p, tool(`x-host-a-${tier}`, tier))).toEqual({ decision: 'allow', toolId: `x-host-a-${tier}`, safetyTier: tier, policyRevision: 0, policySource: 'default', rule: 'tier', governed: false });
    }
  });

  it('decides every tier as the policy says (the matrix)', () => {
    for (const d of ['allow', 'approve', 'deny'] as DispatchDecision[]) {
      for (const tier of SAFETY_TIERS) {
        const p = effectivePolicy({ tiers: { [tier]: d } }, undefined, 0);
        const v = decideDispatch(p, tool('mcp:s.t', tier));
        expect([v.decision, v.rule, v.governed, v.policySource]).toEqual([d, 'tier', true, 'config']);
        // The other tiers keep allow.
        for (const other of SAFETY_TIERS.filter((x) => x !== tier)) expect(decideDispatch(p, tool('mcp:s.t', other)).decision).toBe('allow');
      }
    }
  });

  it('overlays the tenant override on the config default, tier by tier and tool by tool, with its revision', () => {
    const p = effectivePolicy({ tiers: { write: 'approve', exec: 'deny' }, tools: { 'mcp:a.x': 'deny', 'mcp:b.*': 'approve' } }, { tiers: { write: 'allow' }, tools: { 'mcp:a.x': 'allow' } }, 7);
    expect(p.source).toBe('tenant');
    expect(p.tiers).toEqual({ pure: 'allow', read: 'allow', write: 'allow', exec: 'deny' });
    expect(p.tools).toEqual({ 'mcp:a.x': 'allow', 'mcp:b.*': 'approve' });
    expect(decideDispatch(p, tool('x-host-a-run', 'exec'))).toMatchObject({ decision: 'deny', policyRevision: 7, policySource: 'tenant', rule: 'tier' });
    expect(decideDispatch(p, tool('mcp:b.y', 'read'))).toMatchObject({ decision: 'approve', rule: 'tool:mcp:b.*' });
  });

  it('lets an exact tool id beat a prefix, a longer prefix beat a shorter one, and any tool rule beat the tier', () => {
    const tools: Record<string, DispatchDecision> = { 'mcp:*': 'deny', 'mcp:files.*': 'approve', 'mcp:files.read_file': 'allow' };
    expect(toolRule(tools, 'mcp:files.read_file')).toEqual({ pattern: 'mcp:files.read_file', decision: 'allow' });
    expect(toolRule(tools, 'mcp:files.write_file')).toEqual({ pattern: 'mcp:files.*', decision: 'approve' });
    expect(toolRule(tools, 'mcp:search.query')).toEqual({ pattern: 'mcp:*', decision: 'deny' });
    expect(toolRule(tools, 'x-host-a-b')).toBeUndefined();
    const p = effectivePolicy({ tiers: { pure: 'deny' }, tools }, undefined, 0);
    expect(decideDispatch(p, tool('mcp:files.read_file', 'pure'))).toMatchObject({ decision: 'allow', rule: 'tool:mcp:files.read_file' });
    // A literal key ending in '*' is a prefix, never an exact id.
    expect(toolRule({ 'mcp:a*': 'deny' }, 'mcp:a*')).toEqual({ pattern: 'mcp:a*', decision: 'deny' });
    expect(toolRule({ 'mcp:a*': 'deny' }, 'mcp:ab')).toEqual({ pattern: 'mcp:a*', decision: 'deny' });
  });

  it('turns allow into approve for a descriptor that says approval "always", and never loosens a deny', () => {
    const allowAll = effectivePolicy(undefined, undefined, 0);
    expect(decideDispatch(allowAll, tool('x-host-a-g', 'write', 'always'))).toMatchObject({ decision: 'approve', rule: 'descriptor', governed: false });
    const denyWrite = effectivePolicy({ tiers: { write: 'deny' } }, undefined, 3);
    expect(decideDispatch(denyWrite, tool('x-host-a-g', 'write', 'always'))).toMatchObject({ decision: 'deny', rule: 'tier' });
    const approveWrite = effectivePolicy({ tiers: { write: 'approve' } }, undefined, 3);
    expect(decideDispatch(approveWrite, tool('x-host-a-g', 'write', 'always'))).toMatchObject({ decision: 'approve', rule: 'tier' });
    expect(decideDispatch(allowAll, tool('x-host-a-g', 'write', 'conditional')).decision).toBe('allow');
  });

  it('keeps a gate already opened for the call: allow stays approve, deny stays deny', () => {
    const loosened = effectivePolicy({ tiers: {} }, undefined, 4);
    expect(decideDispatch(loosened, { ...tool('x-host-a-w', 'write'), gateOpened: true })).toMatchObject({ decision: 'approve', rule: 'gate', policyRevision: 4 });
    const tightened = effectivePolicy({ tiers: { write: 'deny' } }, undefined, 5);
    expect(decideDispatch(tightened, { ...tool('x-host-a-w', 'write'), gateOpened: true })).toMatchObject({ decision: 'deny', rule: 'tier' });
  });

  it('validates a policy document with its schema (the config key and the REST body alike)', () => {
    const schemas = SchemaRegistry.shared();
    expect(schemas.validate('tool-dispatch-policy', { tiers: { write: 'approve', exec: 'deny' }, tools: { 'mcp:files.*': 'approve', 'x-host-a-b': 'allow' } })).toEqual([]);
    expect(schemas.validate('tool-dispatch-policy', {})).toEqual([]);
    for (const bad of [{ tiers: { write: 'maybe' } }, { tiers: { admin: 'allow' } }, { tools: { 'a*b': 'deny' } }, { tools: { '*': 'deny' } }, { tools: { 'has space': 'deny' } }, { tools: { x: 'yes' } }, { other: {} }, { tiers: 'allow' }, null, []]) {
      expect(schemas.validate('tool-dispatch-policy', bad).length).toBeGreaterThan(0);
    }
  });
});
