import { useEffect, useState } from 'preact/hooks';
import { controlGoal, getGoal, getGoalStatus, listGoalRuns } from '../../api/goals';
import { isRunId, link } from '../../routes';
import { can, Identity } from '../../session';
import { Badge, ConfirmButton, DataTable, duration, ErrorBanner, Facts, JsonBlock, Loading, Meter, Notice, Section, ShortId, useAction, useLoad, usePagedList, when } from '../../ui';

/** One goal: its state, judge and continuation, its bounds as meters, its verdict history; pause, resume, abandon. */
export function GoalDetail({ id, identity, onChanged }: { id: string; identity: Identity; onChanged: () => void }) {
  const [tick, setTick] = useState(0);
  const goal = useLoad(() => getGoal(id), [id, tick]);
  const status = useLoad(() => getGoalStatus(id), [id, tick]);
  const runs = usePagedList((cursor) => listGoalRuns(id, cursor), [id, tick], (r) => r.runId);
  const action = useAction();
  const [notice, setNotice] = useState<string | null>(null);
  useEffect(() => setNotice(null), [id]);
  const g = goal.data;
  const s = status.data;
  const control = (what: 'pause' | 'resume' | 'abandon', message: string) =>
    void action.run(what, () => controlGoal(id, what)).then((r) => {
      if (!r) return;
      setNotice(message);
      setTick((t) => t + 1);
      onChanged();
    });
  const writable = can(identity, 'goals:write');
  const iterations = g?.progress?.iterations ?? 0;
  const elapsedMs = g ? Math.max(0, (s?.closedAt ? Date.parse(s.closedAt) : Date.now()) - Date.parse(g.createdAt)) : 0;
  const cost = s?.accumulatedCostUsd ?? 0;
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
                    <button type="button" class="primary" disabled={Boolean(action.busy)} onClick={() => control('resume', 'Resumed.')}>
                      Resume
                    </button>
                  ) : (
                    <button type="button" disabled={Boolean(action.busy)} onClick={() => control('pause', 'Paused: the scheduler will not re-engage it until resumed.')}>
                      Pause
                    </button>
                  )}
                  <ConfirmButton label="Abandon" confirmLabel="Abandon goal" question="Abandon this goal for good?" danger disabled={Boolean(action.busy)} onConfirm={() => control('abandon', 'Abandoned.')} />
                </>
              ) : null
            }
          >
            <Notice text={notice} />
            <ErrorBanner error={action.error} />
            <Facts
              items={[
                [
                  'State',
                  <>
                    <Badge value={g.state} /> {s?.paused ? <Badge value="paused" /> : null}
                  </>,
                ],
                ['Objective', g.objective],
                ['Judge', `${g.completion.check}${g.completion.verifierRef ? ` (${g.completion.verifierRef})` : ''}`],
                ['Continuation', `${g.continuation.mode}${s?.nextDueAt ? `, next due ${when(s.nextDueAt)}` : ''}`],
                [
                  'Last verdict',
                  g.completion.lastVerdict
                    ? `${g.completion.lastVerdict.satisfied ? 'satisfied' : 'not satisfied'}${g.completion.lastVerdict.confidence !== undefined ? `, confidence ${g.completion.lastVerdict.confidence}` : ''}`
                    : '—',
                ],
                ['Created', when(g.createdAt)],
                ['Id', <ShortId id={g.id} what="goal id" />],
              ]}
            />
            <h3>Bounds</h3>
            <Meter label="Iterations" value={iterations} max={g.bounds.maxLoopIterations} />
            <Meter
              label="Cost (USD)"
              value={cost}
              max={g.bounds.maxCostUsd}
              text={g.bounds.maxCostUsd !== undefined ? `${cost.toFixed(2)} of ${g.bounds.maxCostUsd.toFixed(2)}` : `${cost.toFixed(2)} (no bound)`}
            />
            <Meter
              label="Time since start"
              value={Math.round(elapsedMs / 1000)}
              max={g.bounds.runTimeoutMs !== undefined ? Math.round(g.bounds.runTimeoutMs / 1000) : undefined}
              text={g.bounds.runTimeoutMs !== undefined ? `${duration(elapsedMs)} of ${duration(g.bounds.runTimeoutMs)}` : `${duration(elapsedMs)} (no bound)`}
            />
          </Section>
          <Section title="Verdict history">
            <DataTable
              list={runs}
              caption="Runs judged for this goal"
              noun={['judged run', 'judged runs']}
              empty="No run has been judged yet."
              rowKey={(r) => r.runId}
              columns={[
                { header: '#', cell: (r) => r.ordinal },
                { header: 'Run', cell: (r) => (isRunId(r.runId) ? <ShortId id={r.runId} what="run" href={link.run(r.runId)} /> : <code>{r.runId}</code>) },
                { header: 'Status', cell: (r) => r.status },
                { header: 'Verdict', cell: (r) => (r.satisfied === null ? '—' : <Badge value={r.satisfied ? 'satisfied' : 'unsatisfied'} />) },
                { header: 'Confidence', cell: (r) => r.confidence ?? '—' },
                { header: 'Cost (USD)', cell: (r) => r.costUsd ?? '—' },
                { header: 'Recorded', cell: (r) => when(r.recordedAt) },
              ]}
            />
          </Section>
          {s?.criteria ? <JsonBlock label="Completion criteria" value={s.criteria} /> : null}
        </>
      ) : null}
    </div>
  );
}
