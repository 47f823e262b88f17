import type { ToolApproval, ToolSafetyTier } from '@openwop-host/plugin-sdk';

/** What the policy answers for a tool call: call it, call it once an approval gate is granted, or refuse it. */
export type DispatchDecision = 'allow' | 'approve' | 'deny';

export const DISPATCH_DECISIONS: readonly DispatchDecision[] = ['allow', 'approve', 'deny'];

/** The safety tiers of the catalog (tool-descriptor.schema.json `safetyTier`), in the order the policy lists them. */
export const SAFETY_TIERS: readonly ToolSafetyTier[] = ['pure', 'read', 'write', 'exec'];

/** A policy as written (the config file's `tools.dispatchPolicy`, a tenant's override): schemas/tool-dispatch-policy.schema.json. */
export interface DispatchPolicyDocument {
  tiers?: Partial<Record<ToolSafetyTier, DispatchDecision>>;
  /** Exact tool ids, or prefixes written with a trailing `*`. */
  tools?: Record<string, DispatchDecision>;
}

/** Where the policy in force comes from: nothing configured, the host config file, or the tenant's override over it. */
export type DispatchPolicySource = 'default' | 'config' | 'tenant';

/** The policy in force for a tenant: every tier decided, the per-tool rules of config and override merged. */
export interface EffectiveDispatchPolicy {
  /** The tenant's policy revision: 0 until its first change, then incremented on every change. */
  revision: number;
  source: DispatchPolicySource;
  tiers: Record<ToolSafetyTier, DispatchDecision>;
  tools: Record<string, DispatchDecision>;
}

/** What a dispatch decision is made from: the host-assigned facts of the tool's descriptor. */
export interface DispatchSubject {
  toolId: string;
  safetyTier: ToolSafetyTier;
  approval?: ToolApproval;
  /**
   * An approval gate was already opened for this call (a node running again once its gate is decided):
   * an `allow` stays `approve`, so the gate's outcome holds even when the policy was loosened meanwhile.
   */
  gateOpened?: boolean;
}

/** A decision and why: the facts every record of it (run event, audit entry) carries. */
export interface DispatchVerdict {
  decision: DispatchDecision;
  toolId: string;
  safetyTier: ToolSafetyTier;
  policyRevision: number;
  policySource: DispatchPolicySource;
  /** `tier`, `tool:<id or prefix*>` (a per-tool rule), `descriptor` (its `approval: "always"`) or `gate` (a gate already opened for the call). */
  rule: string;
  /** Whether a policy is configured at all (source not `default`): only then are decisions recorded. */
  governed: boolean;
}

/** With nothing configured every call is allowed, as before the policy existed. */
export const ALLOW_ALL: Readonly<Record<ToolSafetyTier, DispatchDecision>> = Object.freeze({ pure: 'allow', read: 'allow', write: 'allow', exec: 'allow' });

const STRICTNESS: Record<DispatchDecision, number> = { allow: 0, approve: 1, deny: 2 };

/**
 * The policy in force: the built-in allow-all, overlaid by the config file's default, overlaid by the
 * tenant's override (a tier or tool the upper layer does not name keeps the lower layer's decision).
 */
export function effectivePolicy(config: DispatchPolicyDocument | undefined, override: DispatchPolicyDocument | undefined, revision: number): EffectiveDispatchPolicy {
  return {
    revision,
    source: override ? 'tenant' : config ? 'config' : 'default',
    tiers: { ...ALLOW_ALL, ...(config?.tiers ?? {}), ...(override?.tiers ?? {}) },
    tools: { ...(config?.tools ?? {}), ...(override?.tools ?? {}) },
  };
}

/** The per-tool rule that applies to a tool id: its exact id, else the longest matching `prefix*`. */
export function toolRule(tools: Record<string, DispatchDecision>, toolId: string): { pattern: string; decision: DispatchDecision } | undefined {
  const exact = Object.prototype.hasOwnProperty.call(tools, toolId) ? tools[toolId] : undefined;
  if (exact && !toolId.endsWith('*')) return { pattern: toolId, decision: exact };
  let best: { pattern: string; decision: DispatchDecision } | undefined;
  for (const [pattern, decision] of Object.entries(tools)) {
    if (!pattern.endsWith('*')) continue;
    const prefix = pattern.slice(0, -1);
    if (toolId.startsWith(prefix) && (!best || pattern.length > best.pattern.length)) best = { pattern, decision };
  }
  return best;
}

/**
 * THE dispatch decision: every path that calls a tool (a `core.tool` node, the tool-session seam, the
 * MCP invoke seam, and through `core.tool` the MCP mount) asks this before calling. A per-tool rule
 * wins over the tier; a descriptor that says `approval: "always"`, or a gate already opened for the
 * call, turns an `allow` into `approve` (never a `deny` into anything else): the stricter holds.
 */
export function decideDispatch(policy: EffectiveDispatchPolicy, tool: DispatchSubject): DispatchVerdict {
  const byTool = toolRule(policy.tools, tool.toolId);
  let decision: DispatchDecision = byTool ? byTool.decision : (policy.tiers[tool.safetyTier] ?? 'allow');
  let rule = byTool ? `tool:${byTool.pattern}` : 'tier';
  if (tool.approval === 'always' && STRICTNESS[decision] < STRICTNESS.approve) {
    decision = 'approve';
    rule = 'descriptor';
  } else if (tool.gateOpened && STRICTNESS[decision] < STRICTNESS.approve) {
    decision = 'approve';
    rule = 'gate';
  }
  return { decision, toolId: tool.toolId, safetyTier: tool.safetyTier, policyRevision: policy.revision, policySource: policy.source, rule, governed: policy.source !== 'default' };
}
