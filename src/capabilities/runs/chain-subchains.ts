import type { InstallProblem } from '../../platform/artifacts/install-checks';

/**
 * Sub-chain composition (workflow-chain-packs.md §"Sub-chain composition", RFC 0133): a chain declares the chains it
 * composes at run time (`subChains[]`: a sibling `chainId` of its pack, or `{packName, chainId, version}` of a chain
 * installed before) and a `core.subWorkflow` node names one with `config.subChainRef` instead of a `workflowId`.
 *
 * At install every reference is checked, all problems at once: a node's ref must be declared in `subChains[]`
 * and resolve (else `sub_chain_unresolved`), the chains of the pack must not compose themselves (`sub_chain_cycle`),
 * and the nesting is bounded (`sub_chain_max_depth_exceeded` past `MAX_SUB_CHAIN_DEPTH`: the DoS backstop, distinct
 * from a cycle). When a chain is resolved for a run, each ref becomes `config.workflowId` = the child's
 * tenant-scoped id `wfc_<tenant>__<chainId>__<version>` (dots and unsafe characters slugged), which the resolver
 * answers with that chain for that tenant only: the child is co-registered (one id per tenant, chain and version, so
 * two parents composing it share it) and runs as a child run of the parent; another tenant never reaches it.
 */

/** The most nested sub-chain levels co-expanded (advertised as `workflowChainPacks.subChains.maxDepth`). */
export const MAX_SUB_CHAIN_DEPTH = 8;

/** The node types that start a child run, whose `config.subChainRef` names a sub-chain. */
const CHILD_RUN_TYPES = new Set(['core.subWorkflow', 'core.control.subWorkflow']);

function isObject(v: unknown): v is Record<string, unknown> {
  return !!v && typeof v === 'object' && !Array.isArray(v);
}

/** The deterministic, tenant-scoped workflow id of a co-registered child chain. */
export function mintChildWorkflowId(tenant: string, chainId: string, version: string): string {
  const slug = (s: string) => s.replace(/[^0-9A-Za-z._-]/g, '_').replace(/\./g, '_');
  return `wfc_${slug(tenant)}__${slug(chainId)}__${slug(version)}`;
}

/** The chainId a `subChains[].ref` names (a sibling's id, or an installed chain's). */
function refChainId(ref: unknown): string | undefined {
  if (typeof ref === 'string') return ref;
  return isObject(ref) && typeof ref.chainId === 'string' ? ref.chainId : undefined;
}

interface ChainView {
  index: number;
  chainId: string;
  declared: Map<string, { sibling: boolean }>;
  refs: Array<{ ref: string; at: string }>;
}

function viewsOf(content: Record<string, unknown>): ChainView[] {
  const chains = Array.isArray(content.chains) ? content.chains : [];
  const out: ChainView[] = [];
  chains.forEach((c, index) => {
    if (!isObject(c) || typeof c.chainId !== 'string') return;
    const declared = new Map<string, { sibling: boolean }>();
    for (const s of Array.isArray(c.subChains) ? c.subChains : []) {
      const id = isObject(s) ? refChainId(s.ref) : undefined;
      if (id) declared.set(id, { sibling: typeof (s as Record<string, unknown>).ref === 'string' });
    }
    const refs: ChainView['refs'] = [];
    const nodes = isObject(c.dag) && Array.isArray(c.dag.nodes) ? c.dag.nodes : [];
    nodes.forEach((n, ni) => {
      if (isObject(n) && isObject(n.config) && typeof n.config.subChainRef === 'string') refs.push({ ref: n.config.subChainRef, at: `/chains/${index}/dag/nodes/${ni}/config/subChainRef` });
    });
    out.push({ index, chainId: c.chainId, declared, refs });
  });
  return out;
}

/**
 * Every sub-chain problem of a workflow-chain pack. `installedChain(chainId)` says whether the installing scope can run
 * a chain outside the pack (an external ref, installed before).
 */
export async function subChainProblems(content: Record<string, unknown>, installedChain: (chainId: string) => Promise<boolean>, maxDepth = MAX_SUB_CHAIN_DEPTH): Promise<InstallProblem[]> {
  const problems: InstallProblem[] = [];
  const views = viewsOf(content);
  const byId = new Map(views.map((v) => [v.chainId, v]));
  for (const v of views) {
    for (const [id, { sibling }] of v.declared) {
      if (sibling ? !byId.has(id) : !(await installedChain(id))) {
        problems.push({ path: `/chains/${v.index}/subChains`, code: 'sub_chain_unresolved', message: `sub-chain "${id}" of chain ${v.chainId} is ${sibling ? 'no chain of this pack' : 'not installed for this tenant'}` });
      }
    }
    for (const r of v.refs) {
      if (!v.declared.has(r.ref)) problems.push({ path: r.at, code: 'sub_chain_unresolved', message: `subChainRef "${r.ref}" is not declared in chain ${v.chainId}'s subChains` });
    }
  }
  // Cycles and depth over the pack's own composition graph (an installed chain's own refs were checked at its install).
  const reported = new Set<string>();
  const walk = (v: ChainView, depth: number, stack: string[]): void => {
    if (depth > maxDepth) {
      const key = `depth:${stack[0]}`;
      if (!reported.has(key)) problems.push({ path: `/chains/${byId.get(stack[0])!.index}`, code: 'sub_chain_max_depth_exceeded', message: `chain ${stack[0]} nests sub-chains deeper than ${maxDepth} (${stack.join(' -> ')})` });
      reported.add(key);
      return;
    }
    for (const r of v.refs) {
      const child = v.declared.get(r.ref)?.sibling ? byId.get(r.ref) : undefined;
      if (!child) continue;
      if (stack.includes(child.chainId)) {
        const key = `cycle:${[...stack.slice(stack.indexOf(child.chainId))].sort().join(',')}`;
        if (!reported.has(key)) problems.push({ path: r.at, code: 'sub_chain_cycle', message: `chain ${child.chainId} composes itself: ${[...stack.slice(stack.indexOf(child.chainId)), child.chainId].join(' -> ')}` });
        reported.add(key);
        continue;
      }
      walk(child, depth + 1, [...stack, child.chainId]);
    }
  };
  for (const v of views) walk(v, 0, [v.chainId]);
  return problems;
}

/** A node whose `config.subChainRef` is checked as the `core.subWorkflow` it becomes (its workflowId the minted child's). */
export function asDispatched(typeId: string, config: Record<string, unknown>): Record<string, unknown> {
  if (!CHILD_RUN_TYPES.has(typeId) || typeof config.subChainRef !== 'string') return config;
  const { subChainRef, ...rest } = config;
  return { ...rest, workflowId: `wfc_${subChainRef}` };
}

/**
 * A chain's DAG as a tenant runs it: each `config.subChainRef` replaced by the child's tenant-scoped `workflowId`
 * (`versionOf(chainId)` is the version of the chain the ref resolves to, for the tenant). Unchanged without refs.
 */
export function withChildWorkflowIds(dag: Record<string, unknown>, tenant: string, versionOf: (chainId: string) => string | undefined): Record<string, unknown> {
  const nodes = Array.isArray(dag.nodes) ? dag.nodes : [];
  if (!nodes.some((n) => isObject(n) && isObject(n.config) && typeof n.config.subChainRef === 'string')) return dag;
  return {
    ...dag,
    nodes: nodes.map((n) => {
      if (!isObject(n) || !isObject(n.config) || typeof n.config.subChainRef !== 'string') return n;
      const { subChainRef, ...config } = n.config;
      const version = versionOf(subChainRef);
      // An unresolvable ref (the child uninstalled since) names no workflow: the node fails when it starts the child.
      return { ...n, config: { ...config, workflowId: version ? mintChildWorkflowId(tenant, subChainRef, version) : `wfc_unresolved__${subChainRef}` } };
    }),
  };
}
