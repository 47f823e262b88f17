import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError } from '../api/client';
import { cancelRun, followRunEvents, getRun, listRuns, NodeState, nodeStates, RUN_STATUSES, RunEvent, RunSnapshot, RunStatus, startRun, TERMINAL } from '../api/runs';
import { can, Identity } from '../session';
import { Badge, ChoiceFilter, ConfirmButton, ErrorBanner, JsonBlock, Loading, Section, useAction, useLoad, when } from '../ui';

/** Starts a run of a chain installed for the tenant; the host validates the body and its errors are shown as sent. */
function StartRun({ onStarted }: { onStarted: (run: RunSnapshot) => void }) {
  const [workflowId, setWorkflowId] = useState('');
  const [inputs, setInputs] = useState('{}');
  const action = useAction();
  const submit = (e: Event) => {
    e.preventDefault();
    void action
      .run('start', async () => {
        let parsed: unknown;
        try {
          parsed = inputs.trim() ? JSON.parse(inputs) : undefined;
        } catch (err) {
          throw new ApiError(0, 'invalid_json', `The inputs are not valid JSON: ${err instanceof Error ? err.message : String(err)}`);
        }
        // Sent as typed: the host is the one validator of the body, and its validation_error is shown as it answers.
        return startRun({ workflowId: workflowId.trim(), ...(parsed === undefined ? {} : { inputs: parsed as Record<string, unknown> }) });
      })
      .then((run) => run && onStarted(run));
  };
  return (
    <Section title="Start a run">
      <form class="stack" onSubmit={submit} aria-label="Start a run">
        <label for="run-workflow">Workflow id</label>
        <input id="run-workflow" value={workflowId} onInput={(e) => setWorkflowId((e.target as HTMLInputElement).value)} placeholder="chainId or workflow:chainId" autocomplete="off" />
        <label for="run-inputs">Inputs (JSON)</label>
        <textarea id="run-inputs" value={inputs} onInput={(e) => setInputs((e.target as HTMLTextAreaElement).value)} spellcheck={false} rows={4} />
        <div class="actions">
          <button type="submit" class="primary" disabled={Boolean(action.busy)}>
            Start run
          </button>
        </div>
        <ErrorBanner error={action.error} />
      </form>
    </Section>
  );
}

const NODE_EVENT_STATUS: Record<string, string> = {
  'node.started': 'running',
  'node.resumed': 'running',
  'node.suspended': 'suspended',
  'node.completed': 'completed',
  'node.failed': 'failed',
  'node.cancelled': 'cancelled',
  'node.skipped': 'skipped',
};

/**
 * The snapshot's node states, plus the nodes the live events show that the snapshot does not list yet (the
 * engine writes a replay-safe node's state when it finishes, so a node in flight is known from its events).
 */
function withLiveNodes(states: Array<[string, NodeState]>, events: RunEvent[]): Array<[string, NodeState & { fromEvents?: boolean }]> {
  const known = new Set(states.map(([id]) => id));
  const live = new Map<string, string>();
  for (const e of events) if (e.nodeId && !known.has(e.nodeId) && NODE_EVENT_STATUS[e.type]) live.set(e.nodeId, NODE_EVENT_STATUS[e.type]);
  return [...states, ...[...live].map(([id, status]): [string, NodeState & { fromEvents: boolean }] => [id, { status, fromEvents: true }])];
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
    return followRunEvents(
      runId,
      (e) => {
        setEvents((list) => (list.some((x) => x.sequence === e.sequence) ? list : [...list, e].sort((a, b) => a.sequence - b.sequence)));
        // The snapshot follows the events that change it.
        if (/^(run|node)\./.test(e.type)) setTick((t) => t + 1);
      },
      setStreamError,
    );
  }, [runId]);
  const r = run.data;
  // A run seen active that ends while shown: the list follows (a run already ended when opened changes nothing).
  const lastStatus = useRef<string | undefined>(undefined);
  useEffect(() => {
    if (!r) return;
    if (lastStatus.current && !TERMINAL.has(lastStatus.current) && TERMINAL.has(r.status)) onChanged();
    lastStatus.current = r.status;
  }, [r?.status]);
  const nodes = r ? withLiveNodes(nodeStates(r), events) : [];
  return (
    <div>
      <ErrorBanner error={run.error} />
      {run.loading && !r ? <Loading what="the run" /> : null}
      {r ? (
        <Section
          title={`Run ${r.runId}`}
          actions={
            // Cancelling needs runs:cancel, which no other runs scope implies.
            can(identity, 'runs:cancel') && !TERMINAL.has(r.status) && r.status !== 'cancelling' ? (
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
            {r.owner?.principal ? (
              <>
                <dt>Started by</dt>
                <dd>{r.owner.principal}</dd>
              </>
            ) : null}
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
                <dd class="run-error">
                  <code>{r.error.code}</code> {r.error.message}
                </dd>
              </>
            ) : null}
          </dl>
          {nodes.length ? (
            <table class="list">
              <caption>Nodes</caption>
              <thead>
                <tr>
                  <th scope="col">Node</th>
                  <th scope="col">Status</th>
                  <th scope="col">Attempt</th>
                  <th scope="col">Error</th>
                </tr>
              </thead>
              <tbody>
                {nodes.map(([id, n]) => (
                  <tr key={id}>
                    <td>{id}</td>
                    <td>
                      <Badge value={n.status} />
                    </td>
                    <td>{n.fromEvents ? <span class="muted">(from events)</span> : (n.attempt ?? '')}</td>
                    <td>{n.error ? <code>{n.error.code}</code> : ''}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          ) : null}
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

/** The runs of the tenant, newest first: a first page per status filter, then "Load more" with the host's nextCursor. */
function useRunList(status: RunStatus | '', refresh: number) {
  const [runs, setRuns] = useState<RunSnapshot[]>([]);
  const [nextCursor, setNextCursor] = useState<string | null>(null);
  const [loading, setLoading] = useState(true);
  const [error, setError] = useState<ApiError | null>(null);
  // A new filter or refresh starts a new list: a "Load more" answer for the previous one is dropped.
  const generation = useRef(0);
  useEffect(() => {
    let live = true;
    setLoading(true);
    listRuns({ status: status || undefined }).then(
      (page) => {
        if (!live) return;
        setRuns(page.runs);
        setNextCursor(page.nextCursor);
        setError(null);
        setLoading(false);
      },
      (e: unknown) => {
        if (!live) return;
        setError(e instanceof ApiError ? e : new ApiError(0, 'console_error', String(e)));
        setLoading(false);
      },
    );
    generation.current += 1;
    return () => {
      live = false;
    };
  }, [status, refresh]);
  const more = async () => {
    if (!nextCursor) return;
    const asked = generation.current;
    setLoading(true);
    try {
      const page = await listRuns({ status: status || undefined, cursor: nextCursor });
      if (asked !== generation.current) return;
      setRuns((list) => [...list, ...page.runs.filter((r) => !list.some((x) => x.runId === r.runId))]);
      setNextCursor(page.nextCursor);
      setError(null);
    } catch (e) {
      setError(e instanceof ApiError ? e : new ApiError(0, 'console_error', String(e)));
    } finally {
      setLoading(false);
    }
  };
  return { runs, nextCursor, loading, error, more };
}

export function RunsPage({ identity }: { identity: Identity }) {
  const [status, setStatus] = useState<RunStatus | ''>('');
  const [selected, setSelected] = useState<string | null>(null);
  const [refresh, setRefresh] = useState(0);
  const list = useRunList(status, refresh);
  return (
    <div class="split">
      <div>
        {can(identity, 'runs:create') ? <StartRun onStarted={(run) => (setSelected(run.runId), setRefresh((r) => r + 1))} /> : null}
        <Section title="Runs">
          <form class="filters" onSubmit={(e) => e.preventDefault()} aria-label="Filter runs">
            <ChoiceFilter label="Status" all="All statuses" options={RUN_STATUSES} value={status} onChange={setStatus} />
            <button type="button" onClick={() => setRefresh((r) => r + 1)}>
              Refresh
            </button>
          </form>
          <ErrorBanner error={list.error} />
          {list.loading && !list.runs.length ? <Loading what="runs" /> : null}
          {!list.loading && list.runs.length === 0 ? <p class="muted">No run.</p> : null}
          {list.runs.length ? (
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
                {list.runs.map((r) => (
                  <tr key={r.runId} class={selected === r.runId ? 'selected' : ''}>
                    <td>
                      <button type="button" class="link" onClick={() => setSelected(r.runId)} aria-current={selected === r.runId ? 'true' : undefined}>
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
          <p class="muted" role="status">
            {list.runs.length} run{list.runs.length === 1 ? '' : 's'} shown{list.nextCursor ? ', more on the host' : ''}
          </p>
          {list.nextCursor ? (
            <button type="button" disabled={list.loading} onClick={() => void list.more()}>
              Load more
            </button>
          ) : null}
        </Section>
      </div>
      {selected ? <RunDetail key={selected} runId={selected} identity={identity} onChanged={() => setRefresh((r) => r + 1)} /> : <p class="muted">Select a run to see its nodes and follow its events.</p>}
    </div>
  );
}
