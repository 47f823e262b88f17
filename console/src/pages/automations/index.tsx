import { useState } from 'preact/hooks';
import { Automation, listAutomations, setAutomationEnabled } from '../../api/automations';
import { api, call } from '../../api/client';
import type { RunSnapshot } from '../../api/runs';
import { link } from '../../routes';
import { can, Identity } from '../../session';
import { Badge, DataTable, duration, ErrorBanner, Loading, Notice, Section, ShortId, useAction, useLive, useLoad, usePagedList, when } from '../../ui';

function scheduleText(s: Automation['schedule']): string {
  if (typeof s.cron === 'string') return `cron ${s.cron}${typeof s.timezone === 'string' ? ` (${s.timezone})` : ''}`;
  if (typeof s.intervalMs === 'number') return `every ${duration(s.intervalMs)}`;
  return JSON.stringify(s);
}

/** The runs an automation started, as its runs' metadata names it (among the tenant's latest 100 runs). */
async function automationRuns(name: string): Promise<RunSnapshot[]> {
  const r = await call(api.GET('/v1/runs', { params: { query: { limit: 100 } } }));
  return r.runs.filter((run) => (run.metadata as { automation?: unknown } | undefined)?.automation === name);
}

function History({ name }: { name: string }) {
  const runs = useLoad(() => automationRuns(name), [name]);
  return (
    <div class="history">
      <ErrorBanner error={runs.error} />
      {runs.loading && !runs.data ? <Loading what="the automation's runs" /> : null}
      {runs.data && !runs.data.length ? <p class="muted">No run of it among the latest 100 runs.</p> : null}
      {runs.data?.length ? (
        <ul aria-label={`Runs started by ${name}`}>
          {runs.data.map((r) => (
            <li key={r.runId}>
              <ShortId id={r.runId} what="run" href={link.run(r.runId)} /> <Badge value={r.status} /> <span class="muted">{when(r.startedAt)}</span>
            </li>
          ))}
        </ul>
      ) : null}
    </div>
  );
}

/**
 * Installed automations (scheduled runs): the schedule, whether armed, the next fire, the last run and its
 * status, how many runs it started and, on demand, its recent runs; Enable / Disable for a credential that
 * may apply automation proposals (packs:publish and runs:create).
 */
export function AutomationsPage({ identity }: { identity: Identity }) {
  const list = usePagedList((cursor) => listAutomations(cursor), [], (a) => a.name);
  // Applied proposals change the list; next fires move with the clock, which no stream reports.
  useLive(list.reload, { prefixes: ['proposal.'], pollMs: 15_000, stream: can(identity, 'runs:read') });
  const [open, setOpen] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const action = useAction();
  const mayChange = can(identity, 'packs:publish') && can(identity, 'runs:create');
  const toggle = (a: Automation) =>
    void action.run(a.name, () => setAutomationEnabled(a, !a.enabled)).then((state) => {
      if (!state) return;
      setNotice(`${a.name}: ${a.enabled ? 'disable' : 'enable'} proposal ${state}${state === 'applied' ? '' : ' (it applies once its approval gate is granted)'}.`);
      list.reload();
    });
  return (
    <Section title="Automations">
      <Notice text={notice} />
      <ErrorBanner error={action.error} />
      <DataTable
        list={list}
        caption="Automations"
        noun={['automation', 'automations']}
        empty="No automation is installed: apply an automation proposal (see examples/README.md)."
        rowKey={(a) => a.name}
        columns={[
          { header: 'Automation', cell: (a) => <code>{a.name}</code> },
          { header: 'Schedule', cell: (a) => scheduleText(a.schedule) },
          { header: 'State', cell: (a) => <Badge value={a.enabled ? 'enabled' : 'disabled'} /> },
          { header: 'Next fire', cell: (a) => (a.enabled ? when(a.nextRunAt) : '—') },
          {
            header: 'Last run',
            cell: (a) =>
              a.lastRunId ? (
                <>
                  <ShortId id={a.lastRunId} what="run" href={link.run(a.lastRunId)} /> {a.lastRunStatus ? <Badge value={a.lastRunStatus} /> : null} <span class="muted">{when(a.lastRunAt)}</span>
                </>
              ) : (
                <span class="muted">not yet</span>
              ),
          },
          { header: 'Runs', class: 'num', cell: (a) => a.runCount },
          { header: 'Starts', cell: (a) => (typeof a.action.workflowId === 'string' ? <code>{a.action.workflowId}</code> : <code>{String(a.action.type ?? '?')}</code>) },
          {
            header: 'Actions',
            cell: (a) => (
              <div class="actions">
                <button type="button" aria-expanded={open === a.name ? 'true' : 'false'} onClick={() => setOpen(open === a.name ? null : a.name)} aria-label={`History of ${a.name}`}>
                  History
                </button>
                {mayChange ? (
                  <button type="button" disabled={Boolean(action.busy)} onClick={() => toggle(a)} aria-label={`${a.enabled ? 'Disable' : 'Enable'} ${a.name}`}>
                    {a.enabled ? 'Disable' : 'Enable'}
                  </button>
                ) : null}
              </div>
            ),
          },
        ]}
      />
      {open ? (
        <Section title={`Recent runs of ${open}`}>
          <History name={open} />
        </Section>
      ) : null}
    </Section>
  );
}
