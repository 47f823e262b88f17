import { useState } from 'preact/hooks';
import { GOAL_STATES, GoalState, listGoals } from '../../api/goals';
import { link } from '../../routes';
import { can, Identity } from '../../session';
import { Badge, ChoiceFilter, DataTable, Section, useLive, usePagedList } from '../../ui';
import { GoalDetail } from './goal-detail';

/** The tenant's goals by state, and the goal the address names (`#/goals/<id>`). */
export function GoalsPage({ identity, selected }: { identity: Identity; selected?: string }) {
  const [state, setState] = useState<GoalState | ''>('');
  const list = usePagedList((cursor) => listGoals({ state: state || undefined, cursor }), [state], (g) => g.id);
  useLive(list.reload, { prefixes: ['goal.'], stream: can(identity, 'runs:read') });
  return (
    <div class="split">
      <Section title="Goals">
        <DataTable
          list={list}
          caption="Goals"
          noun={['goal', 'goals']}
          rowKey={(g) => g.id}
          selected={selected}
          filters={<ChoiceFilter label="State" all="All states" options={GOAL_STATES} value={state} onChange={setState} />}
          columns={[
            { header: 'Objective', cell: (g) => <a href={link.goal(g.id)}>{g.objective.length > 60 ? `${g.objective.slice(0, 60)}…` : g.objective}</a> },
            { header: 'State', cell: (g) => <Badge value={g.state} /> },
            { header: 'Iterations', cell: (g) => `${g.progress?.iterations ?? 0}${g.bounds.maxLoopIterations !== undefined ? ` / ${g.bounds.maxLoopIterations}` : ''}` },
          ]}
        />
      </Section>
      {selected ? <GoalDetail key={selected} id={selected} identity={identity} onChanged={list.reload} /> : <p class="muted">Select a goal to see its progress.</p>}
    </div>
  );
}
