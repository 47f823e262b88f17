/**
 * What the run view shows of each node, derived from the run's definition (every node, reached or not),
 * its snapshot (`nodeStates`: attempt and error) and its events, which are the most recent word on a
 * node's state (the engine writes a node's row in batches, its events as they happen).
 */
import type { RunDefinition, RunEvent, RunSnapshot } from '../../api/run-model';
import { TERMINAL_EVENTS } from '../../api/run-model';

/** The node state a node event leaves the node in. */
export const NODE_EVENT_STATUS: Readonly<Record<string, string>> = {
  'node.started': 'running',
  'node.resumed': 'running',
  'node.suspended': 'waiting',
  'node.completed': 'completed',
  'node.failed': 'failed',
  'node.cancelled': 'cancelled',
  'node.skipped': 'skipped',
};

/** A stretch of a node's time: executing, or suspended on a gate. */
export interface Segment {
  kind: 'running' | 'waiting';
  start: number;
  /** Absent while it is still going on. */
  end?: number;
}

export interface NodeView {
  id: string;
  typeId?: string;
  config?: Record<string, unknown>;
  /** `pending` until the node is reached. */
  status: string;
  attempt?: number;
  error?: { code: string; message: string };
  segments: Segment[];
  /** The approval gate the node waits on, while it waits. */
  gateId?: string;
  /** Whether the definition names the node (false: known from the snapshot or events only). */
  inDefinition: boolean;
  /** What the node answered (its `node.completed` event's `outputs`). */
  outputs?: unknown;
  /** How many times it was started (`node.started` events: 1 + retries, a resumption not counted). */
  starts?: number;
}

interface SnapshotNodeState {
  status: string;
  attempt?: number;
  error?: { code: string; message: string };
}

function snapshotStates(run: RunSnapshot | undefined): Map<string, SnapshotNodeState> {
  const states = (run?.nodeStates ?? {}) as Record<string, unknown>;
  return new Map(Object.entries(states).map(([id, v]) => [id, (typeof v === 'object' && v !== null ? v : { status: String(v) }) as SnapshotNodeState]));
}

function time(iso: string): number {
  const t = Date.parse(iso);
  return Number.isNaN(t) ? 0 : t;
}

function errorOf(payload: unknown): { code: string; message: string } | undefined {
  const e = (payload as { error?: { code?: unknown; message?: unknown } } | undefined)?.error;
  return e && typeof e.code === 'string' ? { code: e.code, message: typeof e.message === 'string' ? e.message : '' } : undefined;
}

/** Every node of the run in definition order (then any node only the snapshot or the events name). */
export function nodeViews(def: RunDefinition | undefined, run: RunSnapshot | undefined, events: readonly RunEvent[]): NodeView[] {
  const views = new Map<string, NodeView>();
  for (const n of def?.nodes ?? []) views.set(n.id, { id: n.id, typeId: n.typeId, config: n.config, status: 'pending', segments: [], inDefinition: true });
  const snap = snapshotStates(run);
  for (const [id, s] of snap) {
    const v = views.get(id) ?? { id, status: 'pending', segments: [], inDefinition: false };
    views.set(id, { ...v, status: s.status, ...(s.attempt !== undefined ? { attempt: s.attempt } : {}), ...(s.error ? { error: s.error } : {}) });
  }
  const sorted = [...events].sort((a, b) => a.sequence - b.sequence);
  for (const e of sorted) {
    const status = e.nodeId ? NODE_EVENT_STATUS[e.type] : undefined;
    if (!e.nodeId || !status) continue;
    const v = views.get(e.nodeId) ?? { id: e.nodeId, status: 'pending', segments: [], inDefinition: false };
    const t = time(e.timestamp);
    const open = v.segments.length && v.segments[v.segments.length - 1].end === undefined ? v.segments[v.segments.length - 1] : undefined;
    const p = e.payload as Record<string, unknown> | undefined;
    if (open) {
      open.end = t;
      // Event times are those of the log's writes (batched, so a quick node's start and end can share one);
      // the engine's own measure of the execution, when it gives one, stretches the stretch back to it.
      if (e.type === 'node.completed' && typeof p?.durationMs === 'number' && open.kind === 'running') {
        const floor = v.segments.length > 1 ? (v.segments[v.segments.length - 2].end ?? open.start) : -Infinity;
        open.start = Math.max(floor, Math.min(open.start, t - p.durationMs));
      }
    }
    if (e.type === 'node.started' || e.type === 'node.resumed') v.segments.push({ kind: 'running', start: t });
    if (e.type === 'node.suspended') v.segments.push({ kind: 'waiting', start: t });
    if (e.type === 'node.completed' && p && 'outputs' in p) v.outputs = p.outputs;
    if (e.type === 'node.started') {
      v.starts = (v.starts ?? 0) + 1;
      if (typeof p?.typeId === 'string' && !v.typeId) v.typeId = p.typeId;
      if (typeof p?.attempt === 'number') v.attempt = p.attempt;
      delete v.error;
    }
    if (e.type === 'node.failed') v.error = errorOf(p) ?? v.error;
    v.gateId = e.type === 'node.suspended' && typeof p?.interruptId === 'string' ? p.interruptId : undefined;
    v.status = status;
    views.set(e.nodeId, v);
  }
  // A run that ended closes whatever its events left open (a node cancelled with its run, say).
  const end = runEnd(sorted);
  if (end !== undefined) for (const v of views.values()) for (const s of v.segments) if (s.end === undefined) s.end = Math.max(s.start, end);
  return [...views.values()];
}

/** When the run started (its `run.started` event, else the snapshot), in epoch ms. */
export function runStart(run: RunSnapshot | undefined, events: readonly RunEvent[]): number | undefined {
  const started = events.find((e) => e.type === 'run.started');
  if (started) return time(started.timestamp);
  return run?.startedAt ? time(run.startedAt) : undefined;
}

/** When the run ended (its terminal event), in epoch ms; undefined while it goes on. */
export function runEnd(events: readonly RunEvent[]): number | undefined {
  const end = events.find((e) => TERMINAL_EVENTS.has(e.type));
  return end ? time(end.timestamp) : undefined;
}

/** How long the run took: the engine's measure on its terminal event, else the span of its event times. */
export function runDuration(run: RunSnapshot | undefined, events: readonly RunEvent[], now: number): number | undefined {
  const end = events.find((e) => TERMINAL_EVENTS.has(e.type));
  const measured = (end?.payload as { durationMs?: unknown } | undefined)?.durationMs;
  if (typeof measured === 'number') return measured;
  const start = runStart(run, events);
  return start === undefined ? undefined : Math.max(0, (runEnd(events) ?? now) - start);
}

/** The time axis of the node timeline: from the run's start (or its first node) to its end (or now). */
export function timelineAxis(nodes: readonly NodeView[], start: number | undefined, end: number | undefined, now: number): { from: number; to: number } {
  const segs = nodes.flatMap((n) => n.segments);
  const from = Math.min(start ?? Infinity, ...segs.map((s) => s.start));
  const to = Math.max(end ?? now, ...segs.map((s) => s.end ?? now));
  return Number.isFinite(from) ? { from, to: Math.max(from, to) } : { from: now, to: now };
}

/** The time a node spent executing and waiting, up to `now` for a stretch still going on. */
export function nodeDuration(v: NodeView, now: number): { running: number; waiting: number } {
  let running = 0;
  let waiting = 0;
  for (const s of v.segments) {
    const d = Math.max(0, (s.end ?? Math.max(now, s.start)) - s.start);
    if (s.kind === 'running') running += d;
    else waiting += d;
  }
  return { running, waiting };
}

/**
 * What a node was given: its config with the `{{inputs.*}}` and `{{nodes.<id>.*}}` templates filled as
 * the engine fills them (from the run's inputs and the outputs of the nodes before it), and the outputs
 * of the nodes its edges come from. A template whose value is not known yet stays as written.
 */
export function nodeInput(node: NodeView, def: RunDefinition | undefined, runInputs: Record<string, unknown>, nodes: readonly NodeView[], render: (t: string, ctx: Record<string, unknown>) => string): { config?: unknown; upstream: Record<string, unknown> } {
  const outputs: Record<string, unknown> = {};
  for (const n of nodes) if (n.outputs !== undefined) outputs[n.id] = n.outputs;
  const ctx = { inputs: runInputs, nodes: outputs };
  const fill = (v: unknown): unknown => {
    if (typeof v === 'string') return render(v, ctx);
    if (Array.isArray(v)) return v.map(fill);
    if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, fill(x)]));
    return v;
  };
  const upstream: Record<string, unknown> = {};
  for (const e of def?.edges ?? []) if (e.to === node.id && outputs[e.from] !== undefined) upstream[e.from] = outputs[e.from];
  return { ...(node.config !== undefined ? { config: fill(node.config) } : {}), upstream };
}
