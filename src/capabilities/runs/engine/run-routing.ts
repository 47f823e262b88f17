import type { RunNodeEntity } from '../run-node.entity';
import { readiness, SourceOutcome } from './edge-rules';
import type { DagNode, WorkflowDefinition } from '../workflow-definition';
import type { RunWriter } from './run-writer';
import type { Breach } from './run-bounds';
import { LoopBacks } from './loop-backs';

export { loggedExecutions } from './loop-backs';

/** The execution's node state the routing reads and writes (its rows, the outputs of completed nodes, its writer). */
export interface NodeBook {
  state: Map<string, RunNodeEntity>;
  outputs: Map<string, Record<string, unknown>>;
  writer: Pick<RunWriter, 'queue' | 'write' | 'pendingWrite'>;
}

type Settled = Exclude<SourceOutcome, undefined>;

/**
 * Which node of a run starts next (edge-rules.ts): each node's last outcome and when it settled,
 * and when each node last started, on one counter. A target sees a source's outcome only when the
 * source settled after the target last started, so a node is started once per arrival of its
 * sources: once in a DAG, and again in a loop (a rejected gate routed back to itself through an
 * `any_failed` edge is asked again, a node re-entered over an `any_success` loop-back runs again). A node that can
 * never fire and never ran is skipped. Each node's executions are counted (its execution ordinal: loop-backs.ts
 * bounds a loop by it, and it keys the node's effects per execution).
 */
export class RunRouting {
  private seq = 0;
  private readonly started = new Map<string, number>();
  private readonly settled = new Map<string, { at: number; outcome: Settled }>();
  /** Nodes written in flight (running or waiting) by an earlier claim: started again as they are. */
  private readonly inFlight = new Set<string>();
  /** Each node's executions so far, the one in flight included. */
  private readonly executions = new Map<string, number>();
  /** Built on first use, inside the execution: a definition it cannot read fails the run (engine_error), not its claim. */
  private loopBacks?: LoopBacks;

  constructor(
    private readonly def: WorkflowDefinition,
    private readonly book: NodeBook,
  ) {}

  private get loops(): LoopBacks {
    return (this.loopBacks ??= new LoopBacks(this.def));
  }

  /**
   * The run's node rows (a resumed run), replayed in the order they were last written; `terminals`: each node's
   * terminal events in the log (loop-backs.ts `loggedExecutions`, for a definition with loops), else one per row that
   * settled.
   */
  load(rows: RunNodeEntity[], terminals?: Map<string, number>): void {
    const index = new Map(this.def.nodes.map((n, i) => [n.id, i]));
    const ordered = [...rows].sort((a, b) => new Date(a.updatedAt).getTime() - new Date(b.updatedAt).getTime() || (index.get(a.nodeId) ?? 0) - (index.get(b.nodeId) ?? 0));
    for (const r of ordered) {
      this.start(r.nodeId);
      const inFlight = r.status === 'running' || r.status === 'waiting';
      const settled = terminals ? (terminals.get(r.nodeId) ?? 0) : r.status === 'completed' || r.status === 'failed' ? 1 : 0;
      this.executions.set(r.nodeId, settled + (inFlight ? 1 : 0));
      if (r.status === 'completed' || r.status === 'failed' || r.status === 'skipped') this.settle(r.nodeId, r.status);
      else if (inFlight) this.inFlight.add(r.nodeId);
    }
  }

  /** The execution ordinal of the node's current (or last) execution: 1 for its first. */
  execution(nodeId: string): number {
    return this.executions.get(nodeId) ?? 0;
  }

  /** The breach of launching the node now: a new execution a loop re-enters past `maxLoopbackIterations`. */
  loopBackBreach(nodeId: string): Breach | undefined {
    return this.inFlight.has(nodeId) ? undefined : this.loops.breach(nodeId, this.execution(nodeId) + 1);
  }

  /** `launch`: start it now; `skip`: it can never fire and never ran; undefined: nothing to do yet. */
  step(nodeId: string): 'launch' | 'skip' | undefined {
    if (this.inFlight.has(nodeId)) return 'launch';
    const last = this.started.get(nodeId);
    if (!this.def.edges.some((e) => e.to === nodeId)) return last === undefined ? 'launch' : undefined;
    const r = readiness(this.def, nodeId, (source) => {
      const s = this.settled.get(source);
      return s && s.at > (last ?? -1) ? s.outcome : undefined;
    });
    if (r === 'ready') return 'launch';
    return r === 'never' && last === undefined ? 'skip' : undefined;
  }

  /** Whether this start of the node is a new visit (it ran before and is not resumed in flight). */
  revisit(nodeId: string): boolean {
    return this.started.has(nodeId) && !this.inFlight.has(nodeId);
  }

  /** A node starts: again in a loop, as a new execution (its last outputs and decided gate are not its answer). */
  visit(n: DagNode): boolean {
    const s = this.book.state.get(n.id);
    const again = this.revisit(n.id);
    if (!this.inFlight.has(n.id)) this.executions.set(n.id, this.execution(n.id) + 1);
    if (again && s) {
      this.book.state.set(n.id, { ...s, gateId: null });
      this.book.outputs.delete(n.id);
    }
    this.start(n.id);
    return again;
  }

  /** Skips a node (`node.skipped`, its row skipped): it settles as skipped for the nodes after it. */
  skip(n: DagNode, reason: string): void {
    this.start(n.id);
    this.settle(n.id, 'skipped');
    this.book.writer.queue({ type: 'node.skipped', nodeId: n.id, payload: { nodeId: n.id, reason } });
    this.book.writer.write({ nodeId: n.id, typeId: n.typeId, status: 'skipped', attempt: this.book.state.get(n.id)?.attempt ?? 0 });
  }

  /** Skips every node that has not settled (the run ends: failed or cancelled). */
  skipRemaining(reason: string): void {
    const { state, outputs, writer } = this.book;
    for (const n of this.def.nodes) {
      const s = state.get(n.id)?.status;
      if (outputs.has(n.id) || s === 'failed' || s === 'cancelled' || s === 'skipped') continue;
      if (writer.pendingWrite((w) => w.nodeId === n.id && (w.status === 'failed' || w.status === 'cancelled' || w.status === 'completed' || w.status === 'skipped'))) continue;
      this.skip(n, reason);
    }
  }

  start(nodeId: string): void {
    this.inFlight.delete(nodeId);
    this.started.set(nodeId, ++this.seq);
  }

  settle(nodeId: string, outcome: Settled): void {
    this.settled.set(nodeId, { at: ++this.seq, outcome });
  }
}
