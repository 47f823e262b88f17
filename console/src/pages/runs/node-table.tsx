import { Badge, DataTable, duration } from '../../ui';
import { nodeDuration, NodeView, timelineAxis } from './run-state';

function pct(v: number): string {
  return `${Math.max(0, Math.min(100, v)).toFixed(2)}%`;
}

/** A node's stretches on the run's time axis: executing (solid) and waiting for approval (hatched). */
function Bar({ node, start, end, now }: { node: NodeView; start: number; end: number; now: number }) {
  const span = Math.max(1, end - start);
  return (
    <svg class="tl" width="100%" height="14" aria-hidden="true" preserveAspectRatio="none">
      <rect class="tl-track" x="0" y="5" width="100%" height="4" />
      {node.segments.map((s, i) => {
        const from = ((s.start - start) / span) * 100;
        const to = (((s.end ?? Math.max(now, s.start)) - start) / span) * 100;
        return <rect key={i} class={`tl-seg tl-${s.kind}`} x={pct(from)} y="1" width={pct(Math.max(0.6, to - from))} height="12" rx="2" />;
      })}
    </svg>
  );
}

/**
 * Every node of the run with its state, attempt and durations, and a timeline of when it executed and waited
 * (on one axis from the run's start to its end, or to now while it goes on).
 */
export function NodeTable({ nodes, start, end, now, selected, onSelect }: { nodes: NodeView[]; start: number | undefined; end: number | undefined; now: number; selected: string | null; onSelect: (id: string | null) => void }) {
  const { from: axisStart, to: axisEnd } = timelineAxis(nodes, start, end, now);
  return (
    <DataTable
      list={{ items: nodes, loading: false, error: null }}
      caption="Nodes"
      noun={['node', 'nodes']}
      empty="No node has been reported yet."
      status={start !== undefined ? `Timeline over ${duration(axisEnd - axisStart)}${end === undefined ? ' so far' : ''}, from the event log's times (written in batches of up to a quarter second); durations as the engine measured them where it did.` : null}
      rowKey={(n) => n.id}
      selected={selected}
      columns={[
        {
          header: 'Node',
          cell: (n) => (
            <button type="button" class="link" onClick={() => onSelect(selected === n.id ? null : n.id)} aria-pressed={selected === n.id ? 'true' : 'false'}>
              {n.id}
            </button>
          ),
        },
        { header: 'Status', cell: (n) => <Badge value={n.status} /> },
        { header: 'Attempts', class: 'num', cell: (n) => n.starts ?? (n.attempt !== undefined ? n.attempt + 1 : '') },
        {
          header: 'Duration',
          class: 'num',
          cell: (n) => {
            if (!n.segments.length) return <span class="muted">—</span>;
            const d = nodeDuration(n, now);
            return (
              <>
                {duration(d.running)}
                {d.waiting ? <span class="muted"> + {duration(d.waiting)} waiting</span> : null}
              </>
            );
          },
        },
        { header: 'Timeline', class: 'tl-cell', cell: (n) => <Bar node={n} start={axisStart} end={axisEnd} now={now} /> },
        { header: 'Type', cell: (n) => (n.typeId ? <code>{n.typeId}</code> : '') },
        { header: 'Error', cell: (n) => (n.error ? <code title={n.error.message}>{n.error.code}</code> : '') },
      ]}
    />
  );
}
