import { useState } from 'preact/hooks';
import { listWorkflows, WorkflowSummary } from '../../api/workflows';
import { navigate } from '../../navigation';
import { can, Identity } from '../../session';
import { DataTable, Section, useLive, usePagedList } from '../../ui';
import { inputFields } from './input-form';
import { StartForm } from './start-form';

function declared(w: WorkflowSummary): string {
  const fields = inputFields(w.parameters);
  if (!fields.length) return w.parameters ? 'none named' : 'not declared';
  return fields.map((f) => `${f.name}${f.required ? '*' : ''}`).join(', ');
}

/**
 * The workflows installed for the tenant (and workspace): name, version, pack, the inputs each declares
 * (* required), and a start form generated from those inputs. A started run opens on the Runs page.
 */
export function WorkflowsPage({ identity, selected }: { identity: Identity; selected?: string }) {
  const list = usePagedList((cursor) => listWorkflows(cursor), [], (w) => w.workflowId);
  // No stream reports a pack installed or removed: the list is read again every 30 s while the tab is shown.
  useLive(list.reload, { pollMs: 30_000 });
  const [open, setOpen] = useState<string | undefined>(selected);
  const shown = list.items?.find((w) => w.workflowId === open);
  const mayStart = can(identity, 'runs:create');
  return (
    <div class="split">
      <Section title="Installed workflows">
        <DataTable
          list={list}
          caption="Installed workflows"
          noun={['workflow', 'workflows']}
          empty="No workflow is installed: install a workflow-chain pack (openwop-host packs install)."
          rowKey={(w) => w.workflowId}
          selected={open}
          columns={[
            {
              header: 'Workflow',
              cell: (w) => (
                <>
                  <button type="button" class="link" onClick={() => setOpen(open === w.workflowId ? undefined : w.workflowId)} aria-pressed={open === w.workflowId ? 'true' : 'false'}>
                    {w.name}
                  </button>
                  {w.name !== w.workflowId ? <div><code class="muted">{w.workflowId}</code></div> : null}
                </>
              ),
            },
            { header: 'Version', cell: (w) => w.version ?? '—' },
            { header: 'Pack', cell: (w) => (w.pack ? <code>{w.pack}</code> : '—') },
            { header: 'Inputs', cell: (w) => declared(w) },
          ]}
        />
      </Section>
      {shown ? (
        <Section title={`Start ${shown.name}`}>
          {shown.description ? <p class="muted">{shown.description}</p> : null}
          {mayStart ? (
            <StartForm key={shown.workflowId} workflow={shown} onStarted={(run) => navigate('runs', run.runId)} />
          ) : (
            <p class="muted">Starting a run needs the runs:create scope.</p>
          )}
        </Section>
      ) : (
        <p class="muted">Select a workflow to see its inputs and start a run.</p>
      )}
    </div>
  );
}
