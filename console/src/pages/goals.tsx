import { useEffect, useState } from 'preact/hooks';
import { api, call, Schemas } from '../api/client';
import { can, Identity } from '../session';
import { Badge, ChoiceFilter, ConfirmButton, ErrorBanner, JsonBlock, Loading, Meter, Section, useAction, useLoad, when } from '../ui';

type Goal = Schemas['Goal'];
type GoalState = Goal['state'];
const STATES: GoalState[] = ['active', 'satisfied', 'escalated', 'abandoned', 'bound-exceeded'];

function duration(ms: number): string {
  const s = Math.round(ms / 1000);
  if (s < 120) return `${s} s`;
  if (s < 7200) return `${Math.round(s / 60)} min`;
  if (s < 172800) return `${Math.round(s / 3600)} h`;
  return `${Math.round(s / 86400)} d`;
}

function GoalDetail({ id, identity, onChanged }: { id: string; identity: Identity; onChanged: () => void }) {
  const [tick, setTick] = useState(0);
  const goal = useLoad(() => call(api.GET('/v1/goals/{id}', { params: { path: { id } } })), [id, tick]);
  const status = useLoad(() => call(api.GET('/v1/goals/{id}/status', { params: { path: { id } } })), [id, tick]);
  const runs = useLoad(() => call(api.GET('/v1/goals/{id}/runs', { params: { path: { id } } })), [id, tick]);
  const action = useAction();
  const [notice, setNotice] = useState<string | null>(null);
  useEffect(() => setNotice(null), [id]);
  const g = goal.data;
  const s = status.data;
  const done = (message: string) => (r: unknown) => {
    if (!r) return;
    setNotice(message);
    setTick((t) => t + 1);
    onChanged();
  };
  const writable = can(identity, 'goals:write');
  const iterations = g?.progress?.iterations ?? 0;
  const elapsedMs = g ? Math.max(0, (s?.closedAt ? Date.parse(s.closedAt) : Date.now()) - Date.parse(g.createdAt)) : 0;
  return (
    <div>
      <ErrorBanner error={goal.error ?? status.error} />
      {goal.loading && !g ? <Loading what="the goal" /> : null}
      {g ? (
        <>
          <Section
            title={g.objective.length > 80 ? `${g.objective.slice(0, 80)}…` : g.objective}
            actions={
              writable && g.state === 'active' ? (
                <>
                  {s?.paused ? (
                    <button type="button" class="primary" disabled={Boolean(action.busy)} onClick={() => void action.run('resume', () => call(api.POST('/v1/goals/{id}/resume', { params: { path: { id } } }))).then(done('Resumed.'))}>
                      Resume
                    </button>
                  ) : (
                    <button type="button" disabled={Boolean(action.busy)} onClick={() => void action.run('pause', () => call(api.POST('/v1/goals/{id}/pause', { params: { path: { id } } }))).then(done('Paused: the scheduler will not re-engage it until resumed.'))}>
                      Pause
                    </button>
                  )}
                  <ConfirmButton
                    label="Abandon"
                    confirmLabel="Abandon goal"
                    question="Abandon this goal for good?"
                    danger
                    disabled={Boolean(action.busy)}
                    onConfirm={() => void action.run('abandon', () => call(api.POST('/v1/goals/{id}/abandon', { params: { path: { id } } }))).then(done('Abandoned.'))}
                  />
                </>
              ) : null
            }
          >
            {notice ? (
              <p class="notice" role="status">
                {notice}
              </p>
            ) : null}
            <ErrorBanner error={action.error} />
            <dl class="facts">
              <dt>State</dt>
              <dd>
                <Badge value={g.state} /> {s?.paused ? <Badge value="paused" /> : null}
              </dd>
              <dt>Objective</dt>
              <dd>{g.objective}</dd>
              <dt>Judge</dt>
              <dd>
                {g.completion.check}
                {g.completion.verifierRef ? ` (${g.completion.verifierRef})` : ''}
              </dd>
              <dt>Continuation</dt>
              <dd>
                {g.continuation.mode}
                {s?.nextDueAt ? `, next due ${when(s.nextDueAt)}` : ''}
              </dd>
              <dt>Last verdict</dt>
              <dd>
                {g.completion.lastVerdict
                  ? `${g.completion.lastVerdict.satisfied ? 'satisfied' : 'not satisfied'}${g.completion.lastVerdict.confidence !== undefined ? `, confidence ${g.completion.lastVerdict.confidence}` : ''}`
                  : '—'}
              </dd>
              <dt>Created</dt>
              <dd>{when(g.createdAt)}</dd>
            </dl>
            <h3>Bounds</h3>
            <Meter label="Iterations" value={iterations} max={g.bounds.maxLoopIterations} />
            <Meter
              label="Cost (USD)"
              value={s?.accumulatedCostUsd ?? 0}
              max={g.bounds.maxCostUsd}
              text={g.bounds.maxCostUsd !== undefined ? `${(s?.accumulatedCostUsd ?? 0).toFixed(2)} of ${g.bounds.maxCostUsd.toFixed(2)}` : `${(s?.accumulatedCostUsd ?? 0).toFixed(2)} (no bound)`}
            />
            <Meter
              label="Time since start"
              value={Math.round(elapsedMs / 1000)}
              max={g.bounds.runTimeoutMs !== undefined ? Math.round(g.bounds.runTimeoutMs / 1000) : undefined}
              text={g.bounds.runTimeoutMs !== undefined ? `${duration(elapsedMs)} of ${duration(g.bounds.runTimeoutMs)}` : `${duration(elapsedMs)} (no bound)`}
            />
          </Section>
          <Section title="Verdict history">
            <ErrorBanner error={runs.error} />
            {runs.data && runs.data.runs.length === 0 ? <p class="muted">No run has been judged yet.</p> : null}
            {runs.data && runs.data.runs.length ? (
              <table class="list">
                <caption class="sr-only">Runs judged for this goal</caption>
                <thead>
                  <tr>
                    <th scope="col">#</th>
                    <th scope="col">Run</th>
                    <th scope="col">Status</th>
                    <th scope="col">Verdict</th>
                    <th scope="col">Confidence</th>
                    <th scope="col">Cost (USD)</th>
                    <th scope="col">Recorded</th>
                  </tr>
                </thead>
                <tbody>
                  {runs.data.runs.map((r) => (
                    <tr key={r.runId}>
                      <td>{r.ordinal}</td>
                      <td>
                        <code>{r.runId}</code>
                      </td>
                      <td>{r.status}</td>
                      <td>{r.satisfied === null ? '—' : <Badge value={r.satisfied ? 'satisfied' : 'unsatisfied'} />}</td>
                      <td>{r.confidence ?? '—'}</td>
                      <td>{r.costUsd ?? '—'}</td>
                      <td>{when(r.recordedAt)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            ) : null}
          </Section>
          {s?.criteria ? <JsonBlock label="Completion criteria" value={s.criteria} /> : null}
        </>
      ) : null}
    </div>
  );
}

export function GoalsPage({ identity }: { identity: Identity }) {
  const [state, setState] = useState<GoalState | ''>('');
  const [selected, setSelected] = useState<string | null>(null);
  const [refresh, setRefresh] = useState(0);
  const list = useLoad(async () => (await call(api.GET('/v1/goals', { params: { query: state ? { state } : {} } }))).goals, [state, refresh]);
  return (
    <div class="split">
      <Section title="Goals">
        <form class="filters" onSubmit={(e) => e.preventDefault()} aria-label="Filter goals">
          <ChoiceFilter label="State" all="All states" options={STATES} value={state} onChange={setState} />
        </form>
        <ErrorBanner error={list.error} />
        {list.loading && !list.data ? <Loading what="goals" /> : null}
        {list.data && list.data.length === 0 ? <p class="muted">No goal.</p> : null}
        {list.data && list.data.length ? (
          <table class="list">
            <caption class="sr-only">Goals</caption>
            <thead>
              <tr>
                <th scope="col">Objective</th>
                <th scope="col">State</th>
                <th scope="col">Iterations</th>
              </tr>
            </thead>
            <tbody>
              {list.data.map((g) => (
                <tr key={g.id} class={selected === g.id ? 'selected' : ''}>
                  <td>
                    <button type="button" class="link" onClick={() => setSelected(g.id)}>
                      {g.objective.length > 60 ? `${g.objective.slice(0, 60)}…` : g.objective}
                    </button>
                  </td>
                  <td>
                    <Badge value={g.state} />
                  </td>
                  <td>
                    {g.progress?.iterations ?? 0}
                    {g.bounds.maxLoopIterations !== undefined ? ` / ${g.bounds.maxLoopIterations}` : ''}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        ) : null}
      </Section>
      {selected ? <GoalDetail id={selected} identity={identity} onChanged={() => setRefresh((r) => r + 1)} /> : <p class="muted">Select a goal to see its progress.</p>}
    </div>
  );
}
