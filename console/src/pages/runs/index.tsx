import { useState } from 'preact/hooks';
import { listRuns, RUN_STATUSES, RunStatus } from '../../api/runs';
import { navigate } from '../../navigation';
import { link } from '../../routes';
import { can, Identity } from '../../session';
import { Badge, ChoiceFilter, DataTable, Section, ShortId, useLive, usePagedList, when } from '../../ui';
import { RunDetail } from './run-detail';
import { StartRun } from './start-run';

/** The tenant's runs, newest first, ten at a time, and the run the address names (`#/runs/<runId>`). */
export function RunsPage({ identity, selected }: { identity: Identity; selected?: string }) {
  const [status, setStatus] = useState<RunStatus | ''>('');
  const list = usePagedList((cursor) => listRuns({ status: status || undefined, cursor }), [status], (r) => r.runId);
  // Gates opened and decided come on the host stream; a new or finished run is in no stream the tenant can
  // follow (each run has its own), so the first page is also read again every 5 s while the tab is shown.
  useLive(list.reload, { prefixes: ['interrupt.', 'approval.'], pollMs: 5000 });
  return (
    <div class="split">
      <div>
        {can(identity, 'runs:create') ? <StartRun onStarted={(run) => (navigate('runs', run.runId), list.reload())} /> : null}
        <Section title="Runs">
          <DataTable
            list={list}
            caption="Runs"
            noun={['run', 'runs']}
            rowKey={(r) => r.runId}
            selected={selected}
            filters={
              <>
                <ChoiceFilter label="Status" all="All statuses" options={RUN_STATUSES} value={status} onChange={setStatus} />
                <button type="button" onClick={list.reload}>
                  Refresh
                </button>
              </>
            }
            columns={[
              { header: 'Run', cell: (r) => <ShortId id={r.runId} what="run" href={link.run(r.runId)} /> },
              { header: 'Workflow', cell: (r) => r.workflowId },
              { header: 'Status', cell: (r) => <Badge value={r.status} /> },
              { header: 'Started', cell: (r) => when(r.startedAt) },
              { header: 'By', cell: (r) => (typeof (r.metadata as { automation?: unknown } | undefined)?.automation === 'string' ? <span class="muted">automation</span> : (r.owner?.principal ?? '')) },
            ]}
          />
        </Section>
      </div>
      {selected ? <RunDetail key={selected} runId={selected} identity={identity} onChanged={list.reload} /> : <p class="muted">Select a run to see its workflow, nodes and live events.</p>}
    </div>
  );
}
