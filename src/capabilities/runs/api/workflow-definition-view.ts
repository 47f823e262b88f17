import { parseDefinition } from '../workflow-definition';
import type { ResolvedChain } from '../workflow-resolver.service';

/** The wire WorkflowDefinition (workflow-definition.schema.json). */
export interface WorkflowDefinitionView {
  id: string;
  name: string;
  version: string;
  description?: string;
  nodes: Array<{ id: string; typeId: string; name: string; position: { x: number; y: number }; config: Record<string, unknown>; inputs: Record<string, unknown> }>;
  edges: Array<{ id: string; sourceNodeId: string; targetNodeId: string; sourceOutput?: string; targetInput?: string }>;
  triggers: Array<{ id: string; type: string }>;
  variables: unknown[];
  metadata: Record<string, unknown>;
  settings: Record<string, unknown>;
}

/** Horizontal spacing of the computed layout (the host stores no canvas positions). */
const COLUMN = 240;
const ROW = 120;

/**
 * Projects an installed chain onto the protocol's WorkflowDefinition. What the chain does not
 * carry is derived, and only that: node names are their ids unless the chain names them; positions
 * are a layered layout (column = longest path from a root, row = order within the column); the one
 * trigger is `manual` (chains run by `POST /v1/runs`); node port bindings travel on the edges.
 */
export function workflowDefinitionView(workflowId: string, chain: ResolvedChain): WorkflowDefinitionView | undefined {
  const { definition } = parseDefinition(workflowId, chain.dag);
  if (!definition) return undefined;
  const rawNodes = new Map<string, Record<string, unknown>>();
  for (const n of Array.isArray(chain.dag.nodes) ? (chain.dag.nodes as Array<Record<string, unknown>>) : []) if (n && typeof n.id === 'string') rawNodes.set(n.id, n);
  const depth = new Map<string, number>();
  for (const n of definition.nodes) {
    // Topological order: every predecessor already has its depth.
    const preds = definition.edges.filter((e) => e.to === n.id).map((e) => depth.get(e.from) ?? 0);
    depth.set(n.id, preds.length ? Math.max(...preds) + 1 : 0);
  }
  const rows = new Map<number, number>();
  const nodes = definition.nodes.map((n) => {
    const col = depth.get(n.id) ?? 0;
    const row = rows.get(col) ?? 0;
    rows.set(col, row + 1);
    const raw = rawNodes.get(n.id) ?? {};
    const name = typeof raw.name === 'string' && raw.name ? raw.name : typeof raw.label === 'string' && raw.label ? raw.label : n.id;
    return { id: n.id, typeId: n.typeId, name, position: { x: col * COLUMN, y: row * ROW }, config: n.config ?? {}, inputs: {} };
  });
  const edges = definition.edges.map((e) => ({
    id: `${e.from}${e.fromPort ? `.${e.fromPort}` : ''}->${e.to}${e.toPort ? `.${e.toPort}` : ''}`,
    sourceNodeId: e.from,
    targetNodeId: e.to,
    ...(e.fromPort ? { sourceOutput: e.fromPort } : {}),
    ...(e.toPort ? { targetInput: e.toPort } : {}),
  }));
  const view: WorkflowDefinitionView = {
    id: workflowId,
    name: chain.label ?? chain.chainId,
    version: chain.version ?? '0.0.0',
    nodes,
    edges,
    triggers: [{ id: 'manual', type: 'manual' }],
    variables: [],
    metadata: chain.pack ? { customProperties: { pack: chain.pack, chainId: chain.chainId } } : { customProperties: { chainId: chain.chainId } },
    settings: {},
  };
  if (chain.description) view.description = chain.description;
  return view;
}
