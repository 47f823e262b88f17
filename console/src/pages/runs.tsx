import { useEffect, useState } from 'preact/hooks';
import { ApiError } from '../api/client';
import { cancelRun, followRunEvents, getRun, listRuns, RUN_STATUSES, RunEvent, TERMINAL } from '../api/runs';
import { can, Identity } from '../session';
import { Badge, ConfirmButton, ErrorBanner, JsonBlock, Loading, Section, useAction, useLoad, when } from '../ui';

/** The run engine names cancellation `runs:cancel` or folds it into `runs:create`; either lets the button show. */
function mayCancel(i: Identity): boolean {
  return can(i, 'runs:cancel') || can(i, 'runs:create');
}

function RunDetail({ runId, identity, onChanged }: { runId: string; identity: Identity; onChanged: () => void }) {
  const [tick, setTick] = useState(0);
  const run = useLoad(() => getRun(runId), [runId, tick]);
  const [events, setEvents] = useState<RunEvent[]>([]);
  const [streamError, setStreamError] = useState<ApiError | null>(null);
  const action = useAction();
  useEffect(() => {
    setEvents([]);
    setStreamError(null);
    const stop = followRunEvents(
      runId,
      (e) => {
        setEvents((list) => (list.some((x) => x.sequence === e.sequence) ? list : [...list, e]));
        if (/^run\./.test(e.type)) setTick((t) => t + 1);
      },
      setStreamError,
    );
    return stop;
  }, [runId]);
  const r = run.data;
  return (
    <div>
      <ErrorBanner error={run.error} />
      {run.loading && !r ? <Loading what="the run" /> : null}
      {r ? (
        <Section
          title={`Run ${r.runId}`}
          actions={
            mayCancel(identity) && !TERMINAL.has(r.status) && r.status !== 'cancelling' ? (
              <ConfirmButton
                label="Cancel run"
                confirmLabel="Cancel this run"
                question="Cancel the run?"
                danger
                disabled={Boolean(action.busy)}
                onConfirm={() => void action.run('cancel', () => cancelRun(runId)).then((x) => x && (setTick((t) => t + 1), onChanged()))}
              />
            ) : null
          }
        >
          <ErrorBanner error={action.error} />
          <dl class="facts">
            <dt>Status</dt>
            <dd>
              <Badge value={r.status} />
            </dd>
            <dt>Workflow</dt>
            <dd>{r.workflowId}</dd>
            <dt>Started</dt>
            <dd>{when(r.startedAt)}</dd>
            <dt>Completed</dt>
            <dd>{when(r.completedAt ?? null)}</dd>
            {r.currentNodeId ? (
              <>
                <dt>Current node</dt>
                <dd>{r.currentNodeId}</dd>
              </>
            ) : null}
            {r.error ? (
              <>
                <dt>Error</dt>
                <dd>
                  <code>{r.error.code}</code> {r.error.message}
                </dd>
              </>
            ) : null}
          </dl>
          {r.outputs !== undefined ? <JsonBlock label="Outputs" value={r.outputs} /> : null}
          <h3>Events (live)</h3>
          <ErrorBanner error={streamError} />
          <ol class="events" aria-live="polite" aria-label="Run events">
            {events.map((e) => (
              <li key={e.sequence} value={e.sequence}>
                {when(e.timestamp)} <strong>{e.type}</strong>
                {e.nodeId ? ` [${e.nodeId}]` : ''}
              </li>
            ))}
          </ol>
        </Section>
      ) : null}
    </div>
  );
}

export function RunsPage({ identity }: { identity: Identity }) {
  const [status, setStatus] = useState('');
  const [cursor, setCursor] = useState<string | undefined>(undefined);
  const [selected, setSelected] = useState<string | null>(null);
  const [refresh, setRefresh] = useState(0);
  const list = useLoad(() => listRuns({ status: status || undefined, cursor }), [status, cursor, refresh]);
  return (
    <div class="split">
      <Section title="Runs">
        <form class="filters" onSubmit={(e) => e.preventDefault()} aria-label="Filter runs">
          <label>
            Status
            <select value={status} onChange={(e) => (setCursor(undefined), setStatus((e.target as HTMLSelectElement).value))}>
              <option value="">All statuses</option>
              {RUN_STATUSES.map((s) => (
                <option key={s} value={s}>
                  {s}
                </option>
              ))}
            </select>
          </label>
          <button type="button" onClick={() => setRefresh((r) => r + 1)}>
            Refresh
          </button>
        </form>
        <ErrorBanner error={list.error} />
        {list.loading && !list.data ? <Loading what="runs" /> : null}
        {list.data && list.data.runs.length === 0 ? <p class="muted">No run.</p> : null}
        {list.data && list.data.runs.length ? (
          <table class="list">
            <caption class="sr-only">Runs</caption>
            <thead>
              <tr>
                <th scope="col">Run</th>
                <th scope="col">Workflow</th>
                <th scope="col">Status</th>
                <th scope="col">Started</th>
              </tr>
            </thead>
            <tbody>
              {list.data.runs.map((r) => (
                <tr key={r.runId} class={selected === r.runId ? 'selected' : ''}>
                  <td>
                    <button type="button" class="link" onClick={() => setSelected(r.runId)}>
                      {r.runId}
                    </button>
                  </td>
                  <td>{r.workflowId}</td>
                  <td>
                    <Badge value={r.status} />
                  </td>
                  <td>{when(r.startedAt)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        ) : null}
        {list.data?.nextCursor ? (
          <button type="button" onClick={() => setCursor(list.data?.nextCursor ?? undefined)}>
            Next page
          </button>
        ) : null}
      </Section>
      {selected ? <RunDetail runId={selected} identity={identity} onChanged={() => setRefresh((r) => r + 1)} /> : <p class="muted">Select a run to follow its events.</p>}
    </div>
  );
}
