import { admitsFailure, TRIGGER_RULES, TriggerRule } from './engine/edge-rules';
import { CompensationDeclaration, CompensationPolicy, compensationPolicy, nodeCompensation } from './compensation/compensation-declaration';
import { loopBackEdges, loopBackLimit, loopBackProblems } from './engine/loop-backs';

/**
 * A workflow chain's DAG as the run engine executes it (the RFC 0013 `WorkflowDefinitionFragment`:
 * `nodes` + `edges`, edges optionally bound to ports with `nodeId.port`).
 */
export interface DagNode {
  id: string;
  typeId: string;
  config: Record<string, unknown>;
  /** RFC 0151 §B: the node's inverse action (compensation/compensation-declaration.ts). */
  compensation?: CompensationDeclaration;
  /** RFC 0151 §B: the node's committed effect has no inverse. */
  irreversibleEffect?: true;
}

export interface DagEdge {
  from: string;
  fromPort?: string;
  to: string;
  toPort?: string;
  /** How the target fires given this edge's source (edge-rules.ts; default `all_success`). */
  triggerRule?: TriggerRule;
}

export interface WorkflowDefinition {
  workflowId: string;
  nodes: DagNode[];
  edges: DagEdge[];
  /** The chain's `variables[]` declarations, when it declares any (their defaults seed a run's variables: run-variables.ts). */
  variables?: Array<Record<string, unknown>>;
  /** RFC 0151 §B `settings.compensation`: when and how an unwind of the declared inverse actions runs. */
  compensationPolicy?: CompensationPolicy;
  /** `settings.maxLoopbackIterations`, when the chain sets it: how often a loop may re-enter a node (engine/loop-backs.ts). */
  maxLoopbackIterations?: number;
}

export interface DefinitionProblem {
  path: string;
  message: string;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return !!v && typeof v === 'object' && !Array.isArray(v);
}

function splitEndpoint(ref: string, ids: Set<string>): { node: string; port?: string } {
  if (ids.has(ref)) return { node: ref };
  const dot = ref.lastIndexOf('.');
  return dot > 0 ? { node: ref.slice(0, dot), port: ref.slice(dot + 1) } : { node: ref };
}

/**
 * Parses and checks a chain's `dag`: unique node ids, edges between existing nodes, cycles only where a loop can run
 * (through an edge admitting a failed source, edge-rules.ts, or re-entering nodes over any_success edges,
 * engine/loop-backs.ts, bounded by `settings.maxLoopbackIterations`), no
 * edge `condition` (the engine does not evaluate conditions, so it refuses them instead of
 * ignoring them). Returns the definition with its nodes in a topological order.
 */
export function parseDefinition(workflowId: string, dag: unknown): { definition?: WorkflowDefinition; problems: DefinitionProblem[] } {
  const problems: DefinitionProblem[] = [];
  if (!isObject(dag) || !Array.isArray(dag.nodes) || !dag.nodes.length) {
    return { problems: [{ path: '/dag/nodes', message: 'a chain needs at least one node' }] };
  }
  const nodes: DagNode[] = [];
  const ids = new Set<string>();
  const declared = new Set(dag.nodes.map((n) => (isObject(n) ? n.id : undefined)).filter((id): id is string => typeof id === 'string'));
  dag.nodes.forEach((n, i) => {
    if (!isObject(n) || typeof n.id !== 'string' || !n.id || typeof n.typeId !== 'string' || !n.typeId) {
      problems.push({ path: `/dag/nodes/${i}`, message: 'a node needs a string id and typeId' });
      return;
    }
    if (ids.has(n.id)) problems.push({ path: `/dag/nodes/${i}/id`, message: `duplicate node id "${n.id}"` });
    ids.add(n.id);
    nodes.push({ id: n.id, typeId: n.typeId, config: isObject(n.config) ? n.config : {}, ...nodeCompensation(n, i, declared, problems) });
  });
  const edges: DagEdge[] = [];
  const rawEdges = Array.isArray(dag.edges) ? dag.edges : [];
  rawEdges.forEach((e, i) => {
    if (!isObject(e) || typeof e.from !== 'string' || typeof e.to !== 'string') {
      problems.push({ path: `/dag/edges/${i}`, message: 'an edge needs string from and to' });
      return;
    }
    if (e.condition !== undefined) problems.push({ path: `/dag/edges/${i}/condition`, message: 'edge conditions are not supported by this host' });
    const from = splitEndpoint(e.from, ids);
    const to = splitEndpoint(e.to, ids);
    if (!ids.has(from.node)) problems.push({ path: `/dag/edges/${i}/from`, message: `unknown node "${from.node}"` });
    if (!ids.has(to.node)) problems.push({ path: `/dag/edges/${i}/to`, message: `unknown node "${to.node}"` });
    const rule = e.triggerRule;
    if (rule !== undefined && !TRIGGER_RULES.includes(rule as TriggerRule)) problems.push({ path: `/dag/edges/${i}/triggerRule`, message: `triggerRule must be one of ${TRIGGER_RULES.join(', ')}` });
    edges.push({ from: from.node, fromPort: from.port, to: to.node, toPort: to.port, ...(rule !== undefined ? { triggerRule: rule as TriggerRule } : {}) });
  });
  const policy = compensationPolicy(dag.settings, problems);
  const maxLoopbackIterations = loopBackLimit(dag.settings, problems);
  if (problems.length) return { problems };
  // A loop through an edge that admits a failed source (a rejected gate routed back to be asked again) is ordered
  // without those edges; any other cycle without its loop-back edges, when the nodes they re-enter can fire again.
  let order = topologicalOrder(nodes, edges) ?? topologicalOrder(nodes, edges.filter((e) => !admitsFailure(e.triggerRule)));
  if (!order) {
    const backs = loopBackEdges(nodes, edges);
    const loopProblems = loopBackProblems(edges, backs);
    if (loopProblems.length) return { problems: loopProblems };
    order = topologicalOrder(nodes, edges.filter((e) => !backs.includes(e)));
  }
  if (!order) return { problems: [{ path: '/dag/edges', message: 'the edges form a cycle that no loop-back edge closes' }] };
  const variables = Array.isArray(dag.variables) ? dag.variables.filter(isObject) : [];
  const loops = maxLoopbackIterations !== undefined ? { maxLoopbackIterations } : {};
  return { definition: { workflowId, nodes: order, edges, ...(variables.length ? { variables } : {}), ...(policy ? { compensationPolicy: policy } : {}), ...loops }, problems: [] };
}

/** Kahn's algorithm, stable in declaration order; undefined when there is a cycle. */
function topologicalOrder(nodes: DagNode[], edges: DagEdge[]): DagNode[] | undefined {
  const indegree = new Map(nodes.map((n) => [n.id, 0]));
  for (const e of edges) indegree.set(e.to, (indegree.get(e.to) ?? 0) + 1);
  const ready = nodes.filter((n) => indegree.get(n.id) === 0);
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const out: DagNode[] = [];
  while (ready.length) {
    const n = ready.shift()!;
    out.push(n);
    for (const e of edges) {
      if (e.from !== n.id) continue;
      const d = (indegree.get(e.to) ?? 0) - 1;
      indegree.set(e.to, d);
      if (d === 0) ready.push(byId.get(e.to)!);
    }
  }
  return out.length === nodes.length ? out : undefined;
}

export function predecessors(def: WorkflowDefinition, nodeId: string): string[] {
  return [...new Set(def.edges.filter((e) => e.to === nodeId).map((e) => e.from))];
}

/** Nodes no edge leaves: their outputs are the run's outputs. */
export function sinks(def: WorkflowDefinition): DagNode[] {
  const from = new Set(def.edges.map((e) => e.from));
  return def.nodes.filter((n) => !from.has(n.id));
}

/** The inputs a node receives: upstream outputs by node id, plus port-bound values. */
export function nodeInputs(def: WorkflowDefinition, nodeId: string, outputs: Map<string, Record<string, unknown>>): Record<string, unknown> {
  const inputs: Record<string, unknown> = {};
  for (const e of def.edges) {
    if (e.to !== nodeId) continue;
    const out = outputs.get(e.from) ?? {};
    if (e.toPort) inputs[e.toPort] = e.fromPort ? out[e.fromPort] : out;
    else inputs[e.from] = e.fromPort ? out[e.fromPort] : out;
  }
  return inputs;
}

const PLACEHOLDER = /\{\{\s*([a-zA-Z0-9_.-]+)\s*\}\}/g;
const WHOLE = /^\{\{\s*([a-zA-Z0-9_.-]+)\s*\}\}$/;

function lookup(path: string, ctx: { inputs: Record<string, unknown>; nodes: Record<string, unknown> }): unknown {
  const [head, ...rest] = path.split('.');
  let cur: unknown;
  if (head === 'inputs' || head === 'params') cur = ctx.inputs;
  else if (head === 'nodes') cur = ctx.nodes;
  else return undefined;
  for (const k of rest) {
    if (!isObject(cur) || !Object.prototype.hasOwnProperty.call(cur, k)) return undefined;
    cur = cur[k];
  }
  return cur;
}

/**
 * Substitutes `{{inputs.<path>}}` (alias `{{params.<path>}}`, the run's inputs) and
 * `{{nodes.<id>.<path>}}` (an upstream node's outputs) in every string of a node's config. A string
 * that is exactly one placeholder takes the value with its JSON type; inside a longer string the
 * value is written as text (objects as JSON). An unknown path becomes undefined / empty text.
 */
export function templateConfig(value: unknown, ctx: { inputs: Record<string, unknown>; nodes: Record<string, unknown> }): unknown {
  if (typeof value === 'string') {
    const whole = WHOLE.exec(value);
    if (whole) return lookup(whole[1], ctx);
    return value.replace(PLACEHOLDER, (_m, p: string) => {
      const v = lookup(p, ctx);
      return v === undefined || v === null ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v);
    });
  }
  if (Array.isArray(value)) return value.map((v) => templateConfig(v, ctx));
  if (isObject(value)) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, templateConfig(v, ctx)]));
  return value;
}
