import { useMemo } from 'preact/hooks';
import type { DagEdge } from '../../api/runs';
import { DagLayout, edgePath, layoutDag } from './dag-layout';
import type { NodeView } from './run-state';

/** Node states in the legend's order, each with what it means. */
export const NODE_STATES: Array<[string, string]> = [
  ['pending', 'not reached yet'],
  ['running', 'executing'],
  ['waiting', 'waiting for approval'],
  ['completed', 'completed'],
  ['failed', 'failed'],
  ['cancelled', 'cancelled'],
  ['skipped', 'skipped'],
];

function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

function statusClass(status: string): string {
  return `st-${status.replace(/[^a-z-]/gi, '')}`;
}

/**
 * The run's chain drawn as a graph: every node of its definition (reached or not) and every edge, laid out
 * by dagre, each node coloured by its live state and labelled with it (so the state never rests on colour
 * alone). A node is a button: it selects the node to show its details and events.
 */
export function DagView({ workflowId, nodes, edges, selected, onSelect }: { workflowId: string; nodes: NodeView[]; edges: DagEdge[]; selected: string | null; onSelect: (id: string | null) => void }) {
  // The layout depends on the structure only; states change colours, not positions.
  const shape = nodes.map((n) => n.id).join('\n') + '\n\n' + edges.map((e) => `${e.from}>${e.to}`).join('\n');
  const layout: DagLayout = useMemo(() => layoutDag(nodes, edges), [shape]);
  const byId = new Map(nodes.map((n) => [n.id, n]));
  if (!nodes.length) return <p class="muted">This run executed no chain: there is nothing to draw.</p>;
  const choose = (id: string) => onSelect(selected === id ? null : id);
  return (
    <figure class="dag">
      <div class="dag-scroll">
        <svg
          role="group"
          aria-label={`Workflow ${workflowId}: ${nodes.length} node${nodes.length === 1 ? '' : 's'}, ${edges.length} edge${edges.length === 1 ? '' : 's'}`}
          width={layout.width}
          height={layout.height}
          viewBox={`0 0 ${layout.width} ${layout.height}`}
          data-direction={layout.direction}
        >
          <defs>
            <marker id="dag-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">
              <path d="M0,0 L10,5 L0,10 z" class="dag-arrow" />
            </marker>
          </defs>
          <g class="dag-edges" aria-hidden="true">
            {layout.edges.map((e) => (
              <path key={e.key} class={`dag-edge ${statusClass(byId.get(e.from)?.status ?? 'pending')}`} d={edgePath(e.points)} marker-end="url(#dag-arrow)" data-edge={`${e.from}->${e.to}`} />
            ))}
          </g>
          <g class="dag-nodes">
            {layout.nodes.map((p) => {
              const n = byId.get(p.id)!;
              // The accessible name holds the visible text (id, type, state) as drawn.
              const label = [clip(p.id, 22), clip(n.typeId ?? '', 28), `${n.status}${n.attempt && n.attempt > 1 ? ` (attempt ${n.attempt})` : ''}`].filter(Boolean);
              return (
                <g
                  key={p.id}
                  class={`dag-node ${statusClass(n.status)}${selected === p.id ? ' selected' : ''}`}
                  transform={`translate(${p.x.toFixed(1)},${p.y.toFixed(1)})`}
                  data-node-id={p.id}
                  data-status={n.status}
                  role="button"
                  // Lower case: in SVG, attribute names are case-sensitive and Preact sets them as written.
                  tabindex={0}
                  aria-pressed={selected === p.id ? 'true' : 'false'}
                  aria-label={`Node ${label.join(' ')}`}
                  onClick={() => choose(p.id)}
                  onKeyDown={(e) => {
                    if (e.key === 'Enter' || e.key === ' ') {
                      e.preventDefault();
                      choose(p.id);
                    }
                  }}
                >
                  {label[0] !== p.id || (n.typeId && label[1] !== n.typeId) ? <title>{`${p.id} ${n.typeId ?? ''}`}</title> : null}
                  <rect width={p.width} height={p.height} rx="7" ry="7" />
                  <text x="10" y="20" class="dag-id">
                    {label[0]}
                  </text>{' '}
                  <text x="10" y="36" class="dag-type">
                    {n.typeId ? label[1] : ''}
                  </text>{' '}
                  <text x="10" y="52" class="dag-status">
                    {label[label.length - 1]}
                  </text>
                </g>
              );
            })}
          </g>
        </svg>
      </div>
      <figcaption>
        <ul class="dag-legend" aria-label="Node states">
          {NODE_STATES.map(([s, meaning]) => (
            <li key={s}>
              <svg width="14" height="14" aria-hidden="true" class={`dag-node ${statusClass(s)}`}>
                <rect x="1" y="1" width="12" height="12" rx="3" ry="3" />
              </svg>{' '}
              <strong>{s}</strong> <span class="muted">{meaning}</span>
            </li>
          ))}
        </ul>
      </figcaption>
    </figure>
  );
}
