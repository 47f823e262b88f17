import type { EntityManager } from 'typeorm';
import type { RunEntity } from './run.entity';
import type { RunNodeEntity } from './run-node.entity';
import type { TenantScope } from '../../platform/identity/principal';
import { deferredParametersOf } from './chain-deferred-parameters';

/**
 * A run's variable bag (node-packs.md §"`core.subWorkflow` contract", §"Variable seeding") and its
 * parent/child linkage, read from what is stored durably: nothing here is kept in memory.
 *
 * The bag of a run is folded, in this order, from
 * 1. the chain's `variables[].defaultValue` declarations (kept in the stored definition), each deferred chain
 *    parameter's (RFC 0124: chain-deferred-parameters.ts) overridden by the run's `configurable` of its bare name,
 * 2. `metadata.variables`: the seeds written with the run's row when it was created (a
 *    `core.subWorkflow` parent's `inputMapping` projections: one-shot, never updated later),
 * 3. the variable writes of its completed nodes, in the chain's order (`core.setVariable`, and a
 *    `core.subWorkflow` node's `outputMapping` harvest), read from their stored outputs' `variables`,
 * 4. `metadata.variableOverrides`: an operator's (the test seam's) writes, last.
 * A run with none of these reads `{inputs}` only, as before.
 */

/** The node types whose outputs' `variables` object writes the run's variables. */
export const VARIABLE_WRITERS = new Set(['core.setVariable', 'core.subWorkflow', 'core.control.subWorkflow']);

/** The metadata keys of a child run's linkage (kept in the run row's `metadata`). */
export interface ChildLinkage {
  parentRunId: string;
  parentNodeId?: string;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return !!v && typeof v === 'object' && !Array.isArray(v);
}

/** The `variables[]` declarations of a chain's DAG (name and optional default), as the definition keeps them. */
export function declaredVariables(dag: unknown): Array<{ name: string; defaultValue?: unknown; type?: string; format?: string }> {
  if (!isObject(dag) || !Array.isArray(dag.variables)) return [];
  const out: Array<{ name: string; defaultValue?: unknown; type?: string; format?: string }> = [];
  for (const v of dag.variables) {
    if (!isObject(v) || typeof v.name !== 'string' || !v.name) continue;
    out.push({ name: v.name, ...('defaultValue' in v ? { defaultValue: v.defaultValue } : {}), ...(typeof v.type === 'string' ? { type: v.type } : {}), ...(typeof v.format === 'string' ? { format: v.format } : {}) });
  }
  return out;
}

/** The run's variables (see the fold above); `inputs` is always the run's inputs. */
export function runVariables(run: Pick<RunEntity, 'inputs' | 'definition' | 'metadata'> & { configurable?: Record<string, unknown> | null }, nodes: Array<Pick<RunNodeEntity, 'nodeId' | 'status' | 'outputs'>>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const d of declaredVariables(run.definition)) if (d.defaultValue !== undefined) out[d.name] = d.defaultValue;
  const configurable = run.configurable ?? {};
  for (const d of deferredParametersOf(run.definition)) if (!d.sensitive && Object.prototype.hasOwnProperty.call(configurable, d.name)) out[d.name] = configurable[d.name];
  const meta = run.metadata ?? {};
  if (isObject(meta.variables)) Object.assign(out, meta.variables);
  const defined = isObject(run.definition) && Array.isArray(run.definition.nodes) ? (run.definition.nodes as Array<{ id?: unknown; typeId?: unknown } | null>) : [];
  const order = defined.map((n) => n?.id);
  // A node's type is its run's definition's (a node row does not repeat it).
  const typeOf = new Map(defined.map((n) => [n?.id, n?.typeId]));
  const done = nodes.filter((n) => n.status === 'completed' && VARIABLE_WRITERS.has(String(typeOf.get(n.nodeId))) && isObject(n.outputs) && isObject(n.outputs.variables));
  done.sort((a, b) => order.indexOf(a.nodeId) - order.indexOf(b.nodeId));
  for (const n of done) {
    for (const [k, v] of Object.entries(n.outputs!.variables as Record<string, unknown>)) if (v !== undefined) out[k] = v;
  }
  if (isObject(meta.variableOverrides)) Object.assign(out, meta.variableOverrides);
  // The run's inputs keep their place (a variable cannot shadow them).
  return { ...out, inputs: run.inputs ?? {} };
}

/** The child linkage a run's metadata carries, if it is a child run. */
export function linkageOf(run: Pick<RunEntity, 'metadata'>): ChildLinkage | undefined {
  const meta = run.metadata ?? {};
  if (typeof meta.parentRunId !== 'string' || !meta.parentRunId) return undefined;
  return { parentRunId: meta.parentRunId, ...(typeof meta.parentNodeId === 'string' && meta.parentNodeId ? { parentNodeId: meta.parentNodeId } : {}) };
}

export interface ChildRunView {
  runId: string;
  workflowId: string;
  status: string;
  parentNodeId?: string;
}

/**
 * The child runs of a run (same tenant; the child's row names its parent), oldest first: what a
 * parent snapshot shows as `childRuns[]`, what a cancel cascades to, and what a restarted
 * `core.subWorkflow` node finds again instead of starting a second child.
 */
export async function childRunsOf(db: EntityManager, scope: Pick<TenantScope, 'tenant'>, parentRunId: string, parentNodeId?: string): Promise<ChildRunView[]> {
  const params: unknown[] = [scope.tenant, parentRunId];
  let node = '';
  if (parentNodeId !== undefined) {
    params.push(parentNodeId);
    node = ` AND "metadata"->>'parentNodeId' = $3`;
  }
  // run_parent_idx (migration 1765000180000): the predicate `metadata ? 'parentRunId'` is its partial index's.
  const rows = (await db.query(
    `SELECT "id", "workflow_id", "status", "metadata"->>'parentNodeId' AS "parent_node_id" FROM "run"
     WHERE "tenant" = $1 AND "metadata" ? 'parentRunId' AND "metadata"->>'parentRunId' = $2 AND "kind" = 'workflow'${node} ORDER BY "created_at", "id"`,
    params,
  )) as Array<{ id: string; workflow_id: string | null; status: string; parent_node_id: string | null }>;
  return rows.map((r) => ({ runId: r.id, workflowId: r.workflow_id ?? '', status: r.status, ...(r.parent_node_id ? { parentNodeId: r.parent_node_id } : {}) }));
}
