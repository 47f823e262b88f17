import { useState } from 'preact/hooks';
import type { RunEvent } from '../../api/runs';
import { stableJson } from '../../diff';
import { when } from '../../ui';

/** One event: its sequence, time, type and node; the payload shown on demand. */
function EventItem({ e }: { e: RunEvent }) {
  const [open, setOpen] = useState(false);
  return (
    <li value={e.sequence}>
      <details onToggle={(x) => setOpen((x.currentTarget as HTMLDetailsElement).open)}>
        <summary>
          {when(e.timestamp)} <strong>{e.type}</strong>
          {e.nodeId ? ` [${e.nodeId}]` : ''}
        </summary>
        {open ? (
          <pre class="payload" tabIndex={0} aria-label={`Payload of event ${e.sequence}`}>
            {stableJson(e.payload)}
          </pre>
        ) : null}
      </details>
    </li>
  );
}

/** The run's events as they arrive (every one, or one node's), each opening to its payload. */
export function EventLog({ events, nodeIds, node, onNode }: { events: RunEvent[]; nodeIds: string[]; node: string | null; onNode: (id: string | null) => void }) {
  const shown = node ? events.filter((e) => e.nodeId === node) : events;
  return (
    <>
      <form class="filters" aria-label="Filter events" onSubmit={(e) => e.preventDefault()}>
        <label>
          Node
          <select value={node ?? ''} onChange={(e) => onNode((e.target as HTMLSelectElement).value || null)}>
            <option value="">All events</option>
            {nodeIds.map((id) => (
              <option key={id} value={id}>
                {id}
              </option>
            ))}
          </select>
        </label>
        <span class="muted" role="status">
          {shown.length} of {events.length} event{events.length === 1 ? '' : 's'}; open one to see its payload
        </span>
      </form>
      <ol class="events" aria-live="polite" aria-label="Run events">
        {shown.map((e) => (
          <EventItem key={e.sequence} e={e} />
        ))}
      </ol>
    </>
  );
}
