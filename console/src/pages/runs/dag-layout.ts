/**
 * Lays a run's chain out with dagre (`@dagrejs/dagre`, a layered graph layout): ranks by dependency,
 * node order chosen to reduce crossings, edges routed as polylines around the boxes. Left to right when
 * that fits the run view, top to bottom otherwise.
 */
import { graphlib, layout } from '@dagrejs/dagre';

export const NODE_WIDTH = 184;
export const NODE_HEIGHT = 60;
/** Wider than this, a left-to-right drawing gives way to a top-to-bottom one (when that is narrower). */
export const FIT_WIDTH = 760;

export interface Point {
  x: number;
  y: number;
}

export interface PlacedNode {
  id: string;
  /** Top-left corner. */
  x: number;
  y: number;
  width: number;
  height: number;
}

export interface PlacedEdge {
  key: string;
  from: string;
  to: string;
  points: Point[];
}

export interface DagLayout {
  direction: 'LR' | 'TB';
  width: number;
  height: number;
  nodes: PlacedNode[];
  edges: PlacedEdge[];
}

function run(nodes: ReadonlyArray<{ id: string }>, edges: ReadonlyArray<{ from: string; to: string }>, direction: 'LR' | 'TB'): DagLayout {
  const g = new graphlib.Graph({ multigraph: true });
  g.setGraph({ rankdir: direction, nodesep: 28, ranksep: direction === 'LR' ? 56 : 44, edgesep: 12, marginx: 8, marginy: 8 });
  g.setDefaultEdgeLabel(() => ({}));
  const ids = new Set(nodes.map((n) => n.id));
  for (const n of nodes) g.setNode(n.id, { width: NODE_WIDTH, height: NODE_HEIGHT });
  const kept = edges.filter((e) => ids.has(e.from) && ids.has(e.to));
  kept.forEach((e, i) => g.setEdge(e.from, e.to, {}, `e${i}`));
  layout(g);
  const label = g.graph();
  return {
    direction,
    width: Math.ceil(label.width ?? 0),
    height: Math.ceil(label.height ?? 0),
    nodes: nodes.map((n) => {
      const p = g.node(n.id);
      return { id: n.id, x: (p.x ?? 0) - NODE_WIDTH / 2, y: (p.y ?? 0) - NODE_HEIGHT / 2, width: NODE_WIDTH, height: NODE_HEIGHT };
    }),
    edges: kept.map((e, i) => ({ key: `e${i}`, from: e.from, to: e.to, points: (g.edge({ v: e.from, w: e.to, name: `e${i}` }).points ?? []).map((q: Point) => ({ x: q.x, y: q.y })) })),
  };
}

export function layoutDag(nodes: ReadonlyArray<{ id: string }>, edges: ReadonlyArray<{ from: string; to: string }>): DagLayout {
  if (!nodes.length) return { direction: 'LR', width: 0, height: 0, nodes: [], edges: [] };
  const wide = run(nodes, edges, 'LR');
  if (wide.width <= FIT_WIDTH) return wide;
  const tall = run(nodes, edges, 'TB');
  return tall.width < wide.width ? tall : wide;
}

/** An SVG path through an edge's points. */
export function edgePath(points: readonly Point[]): string {
  return points.map((p, i) => `${i ? 'L' : 'M'}${p.x.toFixed(1)},${p.y.toFixed(1)}`).join(' ');
}
