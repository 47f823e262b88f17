import { useEffect, useRef, useState } from 'preact/hooks';
import type { ApiError } from '../../api/client';
import { followRunEvents } from '../../api/run-events';
import { cancelRun, downloadArtifact, forkRun, getRun, getRunDefinition, pauseRun, resumeRun, runArtifacts, RunEvent, RunSnapshot, TERMINAL } from '../../api/runs';
import { link } from '../../routes';
import { can, Identity } from '../../session';
import { renderTemplate } from '../../template';
import { Badge, ConfirmButton, CopyButton, duration, ErrorBanner, Facts, JsonBlock, Loading, Section, shortId, useAction, useLoad, useNow, when } from '../../ui';
import { GateDecision } from '../approvals/gate-decision';
import { DagView } from './dag';
import { EventLog } from './event-log';
import { NodeDetail } from './node-detail';
import { NodeTable } from './node-table';
import { nodeViews, runDuration, runEnd, runStart } from './run-state';

/** The run's inputs (the snapshot's `variables.inputs`). */
export function runInputs(r: RunSnapshot | undefined): Record<string, unknown> {
  const inputs = (r?.variables as { inputs?: unknown } | undefined)?.inputs;
  return inputs && typeof inputs === 'object' && !Array.isArray(inputs) ? (inputs as Record<string, unknown>) : {};
}

/** Who or what started the run: an automation (its runs' metadata names it), a parent run, a fork, or its owner. */
function startedBy(r: RunSnapshot) {
  const meta = (r.metadata ?? {}) as { automation?: unknown };
  const who = r.owner?.principal;
  if (typeof meta.automation === 'string') {
    return (
      <>
        automation <code>{meta.automation}</code>
        {who ? <span class="muted"> (acting as {who})</span> : null}
      </>
    );
  }
  const parent = (r as { parentRunId?: unknown }).parentRunId;
  if (typeof parent === 'string') {
    return (
      <>
        parent run{' '}
        <a href={link.run(parent)}>
          <code>{shortId(parent)}</code>
        </a>
      </>
    );
  }
  const fork = (r as { fork?: { sourceRunId?: string; mode?: string; requestedBy?: string } }).fork;
  if (fork?.sourceRunId) {
    return (
      <>
        {fork.requestedBy ?? who ?? 'someone'}, a {fork.mode} of run{' '}
        <a href={link.run(fork.sourceRunId)}>
          <code>{shortId(fork.sourceRunId)}</code>
        </a>
      </>
    );
  }
  return who;
}

/** The run's events, from the first, followed live over SSE until the terminal one. */
function useRunEvents(runId: string, onRunChange: () => void): { events: RunEvent[]; error: ApiError | null } {
  const [events, setEvents] = useState<RunEvent[]>([]);
  const [error, setError] = useState<ApiError | null>(null);
  useEffect(() => {
    setEvents([]);
    setError(null);
    return followRunEvents(
      runId,
      (e) => {
        setEvents((list) => (list.some((x) => x.sequence === e.sequence) ? list : [...list, e].sort((a, b) => a.sequence - b.sequence)));
        // The snapshot follows the events that change it.
        if (/^(run|node)\./.test(e.type)) onRunChange();
      },
      setError,
    );
  }, [runId]);
  return { events, error };
}

/**
 * One run: its facts, any approval gate it waits on (with Grant/Deny for who may decide), its chain drawn
 * with each node coloured live, a table and timeline of its nodes, a node's details, its outputs, and its
 * events with their payloads on demand.
 */
export function RunDetail({ runId, identity, onChanged }: { runId: string; identity: Identity; onChanged: () => void }) {
  const [tick, setTick] = useState(0);
  const run = useLoad(() => getRun(runId), [runId, tick]);
  const definition = useLoad(() => getRunDefinition(runId), [runId]);
  const stream = useRunEvents(runId, () => setTick((t) => t + 1));
  const [selected, setSelected] = useState<string | null>(null);
  const action = useAction();
  const r = run.data;
  // A run seen active that ends while shown: the list follows (a run already ended when opened changes nothing).
  const lastStatus = useRef<string | undefined>(undefined);
  useEffect(() => {
    if (!r) return;
    if (lastStatus.current && !TERMINAL.has(lastStatus.current) && TERMINAL.has(r.status)) onChanged();
    lastStatus.current = r.status;
  }, [r?.status]);
  const events = stream.events;
  const start = runStart(r, events);
  const end = runEnd(events) ?? (r?.completedAt ? Date.parse(r.completedAt) : undefined);
  const now = useNow(Boolean(r) && end === undefined);
  const took = runDuration(r, events, now);
  const nodes = nodeViews(definition.data, r, events);
  const waiting = nodes.filter((n) => n.status === 'waiting' && n.gateId);
  const node = nodes.find((n) => n.id === selected);
  return (
    <div>
      <ErrorBanner error={run.error} />
      {run.loading && !r ? <Loading what="the run" /> : null}
      {r ? (
        <>
          <Section
            title={`Run ${shortId(r.runId)}`}
            heading={
              <>
                Run <code title={r.runId}>{shortId(r.runId)}</code>
              </>
            }
            actions={
              <>
                {/* Pause and resume need runs:cancel (the protocol's operator scope for stopping work). */}
                {can(identity, 'runs:cancel') && (r.status === 'running' || r.status === 'pending') ? (
                  <button type="button" disabled={Boolean(action.busy)} onClick={() => void action.run('pause', () => pauseRun(runId)).then((x) => x && setTick((t) => t + 1))}>
                    Pause
                  </button>
                ) : null}
                {can(identity, 'runs:cancel') && r.status === 'paused' ? (
                  <button type="button" disabled={Boolean(action.busy)} onClick={() => void action.run('resume', () => resumeRun(runId)).then((x) => x && setTick((t) => t + 1))}>
                    Resume
                  </button>
                ) : null}
                {/* A fork reads the source and starts a run: runs:read and runs:create. */}
                {can(identity, 'runs:create') && can(identity, 'runs:read') && TERMINAL.has(r.status)
                  ? (['replay', 'branch'] as const).map((mode) => (
                      <button
                        type="button"
                        key={mode}
                        title={mode === 'replay' ? 'Re-execute deterministically: recorded tool and approval outcomes are reused' : 'Run it again from the start as a new execution'}
                        disabled={Boolean(action.busy)}
                        onClick={() =>
                          void action.run(mode, () => forkRun(runId, mode)).then((x) => {
                            if (!x) return;
                            onChanged();
                            location.hash = link.run(x.runId);
                          })
                        }
                      >
                        {mode === 'replay' ? 'Replay' : 'Run again (branch)'}
                      </button>
                    ))
                  : null}
                {/* Cancelling needs runs:cancel, which no other runs scope implies. */}
                {can(identity, 'runs:cancel') && !TERMINAL.has(r.status) && r.status !== 'cancelling' ? (
                  <ConfirmButton
                    label="Cancel run"
                    confirmLabel="Cancel this run"
                    question="Cancel the run?"
                    danger
                    disabled={Boolean(action.busy)}
                    onConfirm={() => void action.run('cancel', () => cancelRun(runId)).then((x) => x && (setTick((t) => t + 1), onChanged()))}
                  />
                ) : null}
              </>
            }
          >
            <ErrorBanner error={action.error} />
            <Facts
              items={[
                ['Status', <Badge value={r.status} />],
                ['Workflow', <code>{r.workflowId}</code>],
                [
                  'Run id',
                  <>
                    <code class="run-id">{r.runId}</code> <CopyButton value={r.runId} what="run id" />
                  </>,
                ],
                ['Started by', startedBy(r) ?? '—'],
                ['Started', when(r.startedAt)],
                ['Completed', when(r.completedAt ?? null)],
                took !== undefined && ['Duration', `${duration(took)}${end === undefined ? ' so far' : ''}`],
                r.currentNodeId && ['Current node', r.currentNodeId],
                r.error && [
                  'Error',
                  <>
                    <code>{r.error.code}</code> {r.error.message}
                  </>,
                  'run-error',
                ],
              ]}
            />
          </Section>
          <Section title="Inputs">
            {Object.keys(runInputs(r)).length ? <JsonBlock label="The run's inputs" value={runInputs(r)} /> : <p class="muted">The run was started without inputs.</p>}
          </Section>
          {waiting.length ? (
            <Section title="Waiting for approval">
              {waiting.map((n) => {
                // The gate's own title is the one the engine rendered; this one, filled from the run's inputs, shows until it is read (or to a credential that cannot read gates).
                const title = n.config?.title;
                return <GateDecision key={n.gateId} gateId={n.gateId!} subject={`approval for node ${n.id}`} title={typeof title === 'string' ? renderTemplate(title, { inputs: runInputs(r) }) : undefined} identity={identity} onDecided={() => setTick((t) => t + 1)} />;
              })}
            </Section>
          ) : null}
          <Section title="Workflow">
            <ErrorBanner error={definition.error} />
            {definition.loading && !definition.data ? <Loading what="the workflow" /> : null}
            {definition.data ? <DagView workflowId={r.workflowId} nodes={nodes} edges={definition.data.edges} selected={selected} onSelect={setSelected} /> : null}
          </Section>
          <Section title="Nodes and timeline">
            <NodeTable nodes={nodes} start={start} end={end} now={now} selected={selected} onSelect={setSelected} />
          </Section>
          {node ? <NodeDetail node={node} nodes={nodes} definition={definition.data} runInputs={runInputs(r)} now={now} onClose={() => setSelected(null)} /> : null}
          {runArtifacts(r).length ? (
            <Section title="Artifacts">
              <ul class="artifacts" aria-label="Run artifacts">
                {runArtifacts(r).map((a) => (
                  <li key={a.artifactId}>
                    <code>{a.name}</code> <span class="muted">{a.contentType}, {a.sizeBytes} bytes, node {a.nodeId}</span>{' '}
                    {/* Reading an artifact's bytes needs artifacts:read (the list rides on the run, runs:read). */}
                    {can(identity, 'artifacts:read') ? (
                    <button
                      type="button"
                      disabled={Boolean(action.busy)}
                      onClick={() =>
                        void action.run('download', () => downloadArtifact(runId, a.artifactId)).then((blob) => {
                          if (!blob) return;
                          const url = URL.createObjectURL(blob);
                          const anchor = document.createElement('a');
                          anchor.href = url;
                          anchor.download = a.name;
                          anchor.click();
                          setTimeout(() => URL.revokeObjectURL(url), 10_000);
                        })
                      }
                    >
                      Download {a.name}
                    </button>
                    ) : null}
                  </li>
                ))}
              </ul>
            </Section>
          ) : null}
          {r.outputs !== undefined ? (
            <Section title="Outputs">
              <JsonBlock label="Outputs of the sink nodes, by node id" value={r.outputs} />
            </Section>
          ) : null}
          <Section title="Events (live)">
            <ErrorBanner error={stream.error} />
            <EventLog events={events} nodeIds={nodes.map((n) => n.id)} node={selected} onNode={setSelected} />
          </Section>
        </>
      ) : null}
    </div>
  );
}
