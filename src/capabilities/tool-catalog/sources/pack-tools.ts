import type { ToolDescriptor } from '@openwop-host/plugin-sdk';

interface PackNode {
  typeId: string;
  label?: string;
  description?: string;
  category?: string;
  role?: string;
  capabilities?: string[];
  requiresSecrets?: unknown[];
  requiredCredentials?: unknown[];
  auth?: unknown;
}

interface WorkflowChain {
  chainId: string;
  label?: string;
  description?: string;
  parameters?: Record<string, unknown>;
}

/**
 * The tools of a node pack: one per node typeId, `openwop:<typeId>`. The tier is assigned here, by
 * the host: only a node whose role is `pure` and that does not declare `side-effectful` is `pure`;
 * every other node may change data and is `write`.
 */
export function nodePackTools(manifest: Record<string, unknown>): ToolDescriptor[] {
  const nodes = Array.isArray(manifest.nodes) ? (manifest.nodes as PackNode[]) : [];
  return nodes.map((n) => {
    const caps = n.capabilities ?? [];
    const pure = n.role === 'pure' && !caps.includes('side-effectful');
    const needsCredential = !!(n.requiresSecrets?.length || n.requiredCredentials?.length || n.auth);
    const d: ToolDescriptor = {
      toolId: `openwop:${n.typeId}`,
      source: 'node-pack',
      title: n.label ?? n.typeId,
      egress: pure ? 'none' : 'host-mediated',
      replayPolicy: pure ? 'deterministic' : caps.includes('cacheable') ? 'idempotent' : 'non-deterministic',
      safetyTier: pure ? 'pure' : 'write',
    };
    if (n.description) d.description = n.description;
    if (needsCredential) d.auth = { credentialRef: true };
    return d;
  });
}

/** The tools of a workflow-chain pack: one per chain, `workflow:<chainId>`; running one is a write. */
export function workflowChainTools(manifest: Record<string, unknown>): ToolDescriptor[] {
  const chains = Array.isArray(manifest.chains) ? (manifest.chains as WorkflowChain[]) : [];
  return chains.map((c) => {
    const d: ToolDescriptor = {
      toolId: `workflow:${c.chainId}`,
      source: 'workflow',
      title: c.label ?? c.chainId,
      egress: 'host-mediated',
      replayPolicy: 'non-deterministic',
      safetyTier: 'write',
    };
    if (c.description) d.description = c.description;
    if (c.parameters && typeof c.parameters === 'object' && !Array.isArray(c.parameters)) d.inputSchema = c.parameters;
    return d;
  });
}
