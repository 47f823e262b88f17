import { edgePath, FIT_WIDTH, layoutDag, NODE_HEIGHT, NODE_WIDTH } from './dag-layout';

const overlap = (a: { x: number; y: number }, b: { x: number; y: number }) => Math.abs(a.x - b.x) < NODE_WIDTH && Math.abs(a.y - b.y) < NODE_HEIGHT;

describe('run view: DAG layout', () => {
  it('places every node without overlap, ranked by dependency, and routes every edge between its ends', () => {
    const nodes = ['src', 'left', 'right', 'join'].map((id) => ({ id }));
    const edges = [
      { from: 'src', to: 'left' },
      { from: 'src', to: 'right' },
      { from: 'left', to: 'join' },
      { from: 'right', to: 'join' },
      // Two edges between the same nodes (different ports) are both drawn.
      { from: 'right', to: 'join' },
    ];
    const l = layoutDag(nodes, edges);
    expect(l.direction).toBe('LR');
    expect(l.nodes.map((n) => n.id)).toEqual(['src', 'left', 'right', 'join']);
    const at = Object.fromEntries(l.nodes.map((n) => [n.id, n]));
    for (const a of l.nodes) for (const b of l.nodes) if (a !== b) expect(overlap(a, b)).toBe(false);
    // Left to right: each node after the ones it depends on.
    expect(at.src.x).toBeLessThan(at.left.x);
    expect(at.left.x).toBeLessThan(at.join.x);
    expect(at.left.x).toBe(at.right.x);
    expect(l.edges).toHaveLength(5);
    for (const e of l.edges) {
      const first = e.points[0];
      const last = e.points[e.points.length - 1];
      expect(first.x).toBeGreaterThanOrEqual(at[e.from].x);
      expect(last.x).toBeLessThanOrEqual(at[e.to].x + NODE_WIDTH);
      expect(last.x).toBeGreaterThan(first.x);
    }
    for (const n of l.nodes) {
      expect(n.x + n.width).toBeLessThanOrEqual(l.width);
      expect(n.y + n.height).toBeLessThanOrEqual(l.height);
    }
    expect(edgePath([{ x: 1, y: 2 }, { x: 3.25, y: 4 }])).toBe('M1.0,2.0 L3.3,4.0');
  });

  it('draws a long chain top to bottom when left to right would not fit', () => {
    const nodes = Array.from({ length: 8 }, (_, i) => ({ id: `n${i}` }));
    const l = layoutDag(nodes, nodes.slice(1).map((n, i) => ({ from: nodes[i].id, to: n.id })));
    expect(l.direction).toBe('TB');
    expect(l.width).toBeLessThanOrEqual(FIT_WIDTH);
    const ys = l.nodes.map((n) => n.y);
    expect(ys).toEqual([...ys].sort((a, b) => a - b));
  });

  it('lays out nothing for a run without a chain, and ignores an edge to an unknown node', () => {
    expect(layoutDag([], [])).toEqual({ direction: 'LR', width: 0, height: 0, nodes: [], edges: [] });
    expect(layoutDag([{ id: 'a' }], [{ from: 'a', to: 'ghost' }]).edges).toEqual([]);
  });
});
