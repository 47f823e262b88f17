import type { TenantScope } from '../../../platform/identity/principal';
import type { ReplayLog } from '../replay/run-replay';
import type { DagEdge, DagNode, DefinitionProblem, WorkflowDefinition } from '../workflow-definition';
import type { Breach } from './run-bounds';

/**
 * Loop-backs (WorkflowSettings `maxLoopbackIterations`, RFC 0223's rejected gate routed back): a workflow's graph may
 * have cycles, each closed by a loop-back edge, and a node a loop-back edge enters is executed again each time the
 * loop comes round, at most `maxLoopbackIterations` times (default 5, the schema's) in one run.
 *
 * The loop-back edges are found by a depth-first walk from the nodes no edge enters, in the definition's order (then
 * from any node left), each node's edges in declaration order: an edge to a node on the walk's current path closes a
 * cycle. Every cycle has one, and without them the graph is a DAG, ordered as any other.
 */

/** The schema's default of `settings.maxLoopbackIterations`. */
export const DEFAULT_MAX_LOOPBACK_ITERATIONS = 5;

/** The edges that close the definition's cycles (none in a DAG). */
export function loopBackEdges(nodes: Array<Pick<DagNode, 'id'>>, edges: DagEdge[]): DagEdge[] {
  const entered = new Set(edges.map((e) => e.to));
  const roots = [...nodes.filter((n) => !entered.has(n.id)), ...nodes.filter((n) => entered.has(n.id))];
  const out = new Map<string, DagEdge[]>();
  for (const e of edges) out.set(e.from, [...(out.get(e.from) ?? []), e]);
  const done = new Set<string>();
  const onPath = new Set<string>();
  const backs: DagEdge[] = [];
  for (const root of roots) {
    if (done.has(root.id)) continue;
    // Iterative, so a long chain cannot exhaust the stack: each frame is a node and the index of its next edge.
    const stack: Array<{ id: string; next: number }> = [{ id: root.id, next: 0 }];
    onPath.add(root.id);
    while (stack.length) {
      const top = stack[stack.length - 1];
      const e = (out.get(top.id) ?? [])[top.next++];
      if (!e) {
        stack.pop();
        onPath.delete(top.id);
        done.add(top.id);
        continue;
      }
      if (onPath.has(e.to)) backs.push(e);
      else if (!done.has(e.to)) {
        onPath.add(e.to);
        stack.push({ id: e.to, next: 0 });
      }
    }
  }
  return backs;
}

/**
 * What makes a cycle runnable: a node a loop-back edge enters must fire on its first visit, before the loop has come
 * round, and again on each arrival of the loop alone. So every edge into it is `any_success` and at least one of them
 * is not a loop-back (its entry). Anything else would wait forever, and is refused.
 */
export function loopBackProblems(edges: DagEdge[], backs: DagEdge[]): DefinitionProblem[] {
  const problems: DefinitionProblem[] = [];
  for (const target of new Set(backs.map((e) => e.to))) {
    const into = edges.filter((e) => e.to === target);
    const from = backs.filter((e) => e.to === target).map((e) => `"${e.from}"`).join(', ');
    if (into.some((e) => e.triggerRule !== 'any_success')) {
      problems.push({ path: '/dag/edges', message: `the edges form a cycle back into "${target}" (from ${from}) that cannot run: every edge into a node a loop re-enters must be any_success (it fires on its entry, then on each loop-back)` });
    } else if (into.every((e) => backs.includes(e))) {
      problems.push({ path: '/dag/edges', message: `the edges form a cycle back into "${target}" (from ${from}) that nothing enters: an edge from outside the loop must lead into it` });
    }
  }
  return problems;
}

/** The bound a definition sets (`settings.maxLoopbackIterations`), or the problem with it. */
export function loopBackLimit(settings: unknown, problems: DefinitionProblem[]): number | undefined {
  if (!settings || typeof settings !== 'object' || Array.isArray(settings)) return undefined;
  const v = (settings as Record<string, unknown>).maxLoopbackIterations;
  if (v === undefined) return undefined;
  if (!Number.isInteger(v) || (v as number) < 1 || (v as number) > 10_000) {
    problems.push({ path: '/dag/settings/maxLoopbackIterations', message: 'maxLoopbackIterations must be an integer from 1 to 10000' });
    return undefined;
  }
  return v as number;
}

/**
 * A run's loop-backs: which nodes loops re-enter, the bound on their executions, and the breach past it
 * (`workflow.loopback-limit`, then the run fails `loop_limit_exceeded`).
 */
export class LoopBacks {
  readonly targets: ReadonlySet<string>;
  readonly limit: number;

  constructor(def: WorkflowDefinition) {
    this.targets = new Set(loopBackEdges(def.nodes, def.edges).map((e) => e.to));
    this.limit = def.maxLoopbackIterations ?? DEFAULT_MAX_LOOPBACK_ITERATIONS;
  }

  /** The breach of starting execution `next` of a node: only a node a loop re-enters, only past the bound. */
  breach(nodeId: string, next: number): Breach | undefined {
    if (!this.targets.has(nodeId) || next <= this.limit) return undefined;
    const iterations = next - 1;
    return {
      kind: 'loop-iterations',
      limit: this.limit,
      observed: next,
      code: 'loop_limit_exceeded',
      message: `Node "${nodeId}" would loop back for execution ${next}, past the workflow's maxLoopbackIterations ${this.limit}.`,
      nodeId,
      event: { type: 'workflow.loopback-limit', nodeId, payload: { nodeId, iterations, limit: this.limit } },
    };
  }
}

/**
 * A resumed run's node executions so far, by node, from its log: each node's terminals (`node.completed`,
 * `node.failed`), the executions a loop may have repeated. Read only for a definition with loops (in a DAG a node
 * executes once, as its row says); the engine adds the execution still in flight.
 */
export async function loggedExecutions(def: WorkflowDefinition, log: ReplayLog, scope: TenantScope, runId: string): Promise<Map<string, number> | undefined> {
  if (!loopBackEdges(def.nodes, def.edges).length) return undefined;
  const counts = new Map<string, number>();
  for (const type of ['node.completed', 'node.failed']) {
    for (let after = 0; ; ) {
      const page = await log.read(scope, runId, { type, afterSequence: after, limit: 1000 });
      for (const e of page) {
        const nodeId = typeof e.nodeId === 'string' ? e.nodeId : (e.payload as { nodeId?: unknown } | undefined)?.nodeId;
        if (typeof nodeId === 'string') counts.set(nodeId, (counts.get(nodeId) ?? 0) + 1);
      }
      if (page.length < 1000) break;
      after = page[page.length - 1].sequence;
    }
  }
  return counts;
}
