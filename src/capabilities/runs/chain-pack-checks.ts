import type { InstallProblem } from '../../platform/artifacts/install-checks';
import { AuthorSchemas } from '../../platform/schemas/author-schemas';
import { asDispatched, subChainProblems } from './chain-subchains';

/** A problem of a node's config at a path inside it (a JSON Pointer; '' is the config itself). */
export interface NodeConfigProblem {
  path: string;
  /** `invalid_node_config`, or `invalid_schema` for a JSON Schema the config carries that does not compile. */
  code: string;
  message: string;
}

/**
 * What the host's own executors answer beyond the SDK's `validateConfig` strings: each problem at its
 * path in the config (a `core.clarification` question's schema that does not compile, at the keyword).
 */
export interface StructuredConfigCheck {
  configProblems(config: Record<string, unknown>): NodeConfigProblem[];
}

/**
 * What the checks of a workflow-chain pack ask of the host: which node types it executes (and
 * whether it accepts a node's config), and which tools the catalog of the installing scope holds.
 */
export interface ChainCheckHost {
  /** The config problems of a node of `typeId` (empty: fine), or undefined when no executor serves it. */
  nodeProblems(typeId: string, config: Record<string, unknown>): NodeConfigProblem[] | undefined;
  /** True when `typeId` calls a catalog tool named by `config.toolId` (core.tool and its aliases). */
  callsTool(typeId: string): boolean;
  /** True when the tool catalog of the scope the pack is installed in holds `toolId`. */
  toolVisible(toolId: string): Promise<boolean>;
  /** The child workflow a node of `typeId` starts (`core.subWorkflow`'s `workflowId`), if it starts one. */
  childWorkflow?(typeId: string, config: Record<string, unknown>): string | undefined;
  /** True when the scope the pack is installed in can run `workflowId` (an installed chain). */
  workflowVisible?(workflowId: string): Promise<boolean>;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return !!v && typeof v === 'object' && !Array.isArray(v);
}

const PLACEHOLDER_BODY = /^[a-zA-Z0-9_.-]+$/;
const WHOLE_PLACEHOLDER = /^\{\{\s*[^{}]+\s*\}\}$/;

/**
 * Every problem of a workflow-chain pack's chains, all of them at once (install answers them in one
 * 422): per chain, an input schema (`parameters`) that does not compile, nodes without id or typeId, duplicate ids, node types no executor serves, configs
 * their executor refuses, tools the catalog of the installing scope does not hold (a `workflow:` tool of a chain
 * of the same pack is fine: it is installed together), edges naming unknown nodes, edge conditions,
 * cycles, and templates the engine could not fill (`{{...}}` that is unclosed, has another root than
 * `inputs`/`params`/`nodes`, or reads a node that is not upstream of the node).
 */
export async function chainPackProblems(content: Record<string, unknown>, host: ChainCheckHost): Promise<InstallProblem[]> {
  const problems: InstallProblem[] = [];
  const chains = Array.isArray(content.chains) ? content.chains : [];
  const localChains = new Set(chains.filter(isObject).map((c) => c.chainId).filter((id): id is string => typeof id === 'string'));
  for (const [ci, chain] of chains.entries()) {
    if (!isObject(chain)) continue; // the manifest schema reports it
    // The chain's input schema (its `workflow:` tool's inputSchema): an author schema like any other.
    if (isObject(chain.parameters)) {
      for (const p of AuthorSchemas.shared().problems(chain.parameters)) problems.push({ path: `/chains/${ci}/parameters${p.path}`, code: 'invalid_schema', message: p.message });
    }
    problems.push(...(await dagProblems(`/chains/${ci}/dag`, chain.dag, host, localChains)));
  }
  // RFC 0133 sub-chains: declared, resolvable, acyclic, bounded (chain-subchains.ts).
  problems.push(...(await subChainProblems(content, async (chainId) => (await host.workflowVisible?.(chainId)) === true)));
  return problems;
}

async function dagProblems(base: string, dag: unknown, host: ChainCheckHost, localChains: Set<string>): Promise<InstallProblem[]> {
  const out: InstallProblem[] = [];
  if (!isObject(dag) || !Array.isArray(dag.nodes) || !dag.nodes.length) {
    return [{ path: `${base}/nodes`, code: 'empty_chain', message: 'a chain needs at least one node' }];
  }
  const ids = new Map<string, number>();
  const nodes: Array<{ index: number; id: string; typeId: string; config: Record<string, unknown> }> = [];
  dag.nodes.forEach((n, i) => {
    if (!isObject(n) || typeof n.id !== 'string' || !n.id || typeof n.typeId !== 'string' || !n.typeId) {
      out.push({ path: `${base}/nodes/${i}`, code: 'invalid_node', message: 'a node needs a string id and typeId' });
      return;
    }
    if (ids.has(n.id)) out.push({ path: `${base}/nodes/${i}/id`, code: 'duplicate_node_id', message: `duplicate node id "${n.id}"` });
    else ids.set(n.id, i);
    nodes.push({ index: i, id: n.id, typeId: n.typeId, config: isObject(n.config) ? n.config : {} });
  });

  // Edges: endpoints (`node` or `node.port`) must name nodes; conditions are not evaluated by this host.
  const edges: Array<{ from: string; to: string }> = [];
  const rawEdges = Array.isArray(dag.edges) ? dag.edges : [];
  rawEdges.forEach((e, i) => {
    if (!isObject(e) || typeof e.from !== 'string' || typeof e.to !== 'string') {
      out.push({ path: `${base}/edges/${i}`, code: 'invalid_edge', message: 'an edge needs string from and to' });
      return;
    }
    if (e.condition !== undefined) out.push({ path: `${base}/edges/${i}/condition`, code: 'unsupported_condition', message: 'edge conditions are not evaluated by this host' });
    const from = endpointNode(e.from, ids);
    const to = endpointNode(e.to, ids);
    let ok = true;
    if (!ids.has(from)) {
      out.push({ path: `${base}/edges/${i}/from`, code: 'unknown_edge_endpoint', message: `no node "${from}" in this chain` });
      ok = false;
    }
    if (!ids.has(to)) {
      out.push({ path: `${base}/edges/${i}/to`, code: 'unknown_edge_endpoint', message: `no node "${to}" in this chain` });
      ok = false;
    }
    if (ok) edges.push({ from, to });
  });
  const cyclic = cycleMembers([...ids.keys()], edges);
  if (cyclic.length) out.push({ path: `${base}/edges`, code: 'cycle', message: `the edges form a cycle through ${cyclic.map((n) => `"${n}"`).join(', ')}` });

  const ancestors = ancestorsOf([...ids.keys()], edges);
  for (const n of nodes) {
    const at = `${base}/nodes/${n.index}`;
    // A sub-chain reference is checked as the child-run node it becomes (its workflowId the minted child's).
    const issues = host.nodeProblems(n.typeId, asDispatched(n.typeId, n.config));
    if (issues === undefined) {
      out.push({ path: `${at}/typeId`, code: 'unknown_node_type', message: `no node executor serves "${n.typeId}"` });
    } else {
      for (const p of issues) out.push({ path: `${at}/config${p.path}`, code: p.code, message: p.message });
      const toolId = n.config.toolId;
      if (host.callsTool(n.typeId) && typeof toolId === 'string' && toolId && !WHOLE_PLACEHOLDER.test(toolId)) {
        const local = toolId.startsWith('workflow:') && localChains.has(toolId.slice('workflow:'.length));
        if (!local && !(await host.toolVisible(toolId))) {
          out.push({ path: `${at}/config/toolId`, code: 'unknown_tool', message: `the tool catalog of this tenant has no tool "${toolId}"` });
        }
      }
      // A child workflow (core.subWorkflow) must be a chain of this pack or one the tenant can run.
      const child = host.childWorkflow?.(n.typeId, n.config);
      if (child && !WHOLE_PLACEHOLDER.test(child) && !localChains.has(child) && host.workflowVisible && !(await host.workflowVisible(child))) {
        const key = typeof n.config.workflowId === 'string' ? 'workflowId' : 'childWorkflowId';
        out.push({ path: `${at}/config/${key}`, code: 'unknown_child_workflow', message: `this tenant has no workflow "${child}" to start as a child run` });
      }
    }
    templateProblems(`${at}/config`, n.config, n.id, ids, ancestors.get(n.id) ?? new Set(), out);
  }
  return out;
}

function endpointNode(ref: string, ids: Map<string, number>): string {
  if (ids.has(ref)) return ref;
  const dot = ref.lastIndexOf('.');
  return dot > 0 ? ref.slice(0, dot) : ref;
}

/** The nodes on a cycle or downstream of one (what Kahn's algorithm cannot order), in declaration order. */
function cycleMembers(ids: string[], edges: Array<{ from: string; to: string }>): string[] {
  const indegree = new Map(ids.map((id) => [id, 0]));
  for (const e of edges) indegree.set(e.to, (indegree.get(e.to) ?? 0) + 1);
  const ready = ids.filter((id) => indegree.get(id) === 0);
  const done = new Set<string>();
  while (ready.length) {
    const id = ready.shift()!;
    done.add(id);
    for (const e of edges) {
      if (e.from !== id) continue;
      const d = (indegree.get(e.to) ?? 0) - 1;
      indegree.set(e.to, d);
      if (d === 0) ready.push(e.to);
    }
  }
  return ids.filter((id) => !done.has(id));
}

/** Per node, every node upstream of it (transitively). */
function ancestorsOf(ids: string[], edges: Array<{ from: string; to: string }>): Map<string, Set<string>> {
  const parents = new Map(ids.map((id) => [id, edges.filter((e) => e.to === id).map((e) => e.from)]));
  const memo = new Map<string, Set<string>>();
  const visit = (id: string, path: Set<string>): Set<string> => {
    const known = memo.get(id);
    if (known) return known;
    const acc = new Set<string>();
    for (const p of parents.get(id) ?? []) {
      if (path.has(p)) continue; // a cycle, reported on its own
      acc.add(p);
      for (const a of visit(p, new Set([...path, p]))) acc.add(a);
    }
    memo.set(id, acc);
    return acc;
  };
  return new Map(ids.map((id) => [id, visit(id, new Set([id]))]));
}

function templateProblems(path: string, value: unknown, nodeId: string, ids: Map<string, number>, upstream: Set<string>, out: InstallProblem[]): void {
  if (typeof value === 'string') {
    for (const m of stringTemplateProblems(value, nodeId, ids, upstream)) out.push({ path, code: 'bad_template', message: m });
    return;
  }
  if (Array.isArray(value)) value.forEach((v, i) => templateProblems(`${path}/${i}`, v, nodeId, ids, upstream, out));
  else if (isObject(value)) for (const [k, v] of Object.entries(value)) templateProblems(`${path}/${k.replace(/~/g, '~0').replace(/\//g, '~1')}`, v, nodeId, ids, upstream, out);
}

function stringTemplateProblems(s: string, nodeId: string, ids: Map<string, number>, upstream: Set<string>): string[] {
  const out: string[] = [];
  let i = 0;
  for (;;) {
    const open = s.indexOf('{{', i);
    if (open < 0) return out;
    const end = s.indexOf('}}', open + 2);
    if (end < 0) {
      out.push(`unclosed "{{" in "${s}"`);
      return out;
    }
    const body = s.slice(open + 2, end).trim();
    i = end + 2;
    if (!PLACEHOLDER_BODY.test(body)) {
      out.push(`"{{${body}}}" is not a placeholder: use {{inputs.<path>}}, {{params.<path>}} or {{nodes.<nodeId>.<path>}}`);
      continue;
    }
    const [root, ...rest] = body.split('.');
    if (root === 'inputs' || root === 'params') continue;
    if (root !== 'nodes') {
      out.push(`"{{${body}}}" reads "${root}": a placeholder reads inputs, params or nodes`);
      continue;
    }
    const ref = rest[0];
    if (!ref) out.push(`"{{${body}}}" names no node`);
    else if (!ids.has(ref)) out.push(`"{{${body}}}" reads node "${ref}", which is not in this chain`);
    else if (ref === nodeId) out.push(`"{{${body}}}" reads the node's own outputs`);
    else if (!upstream.has(ref)) out.push(`"{{${body}}}" reads node "${ref}", which is not upstream of "${nodeId}" (add an edge so it runs first)`);
  }
}
