import { useEffect, useMemo, useState } from 'preact/hooks';
import { api, call, Schemas } from '../api/client';
import { stableJson } from '../diff';
import { can, Identity } from '../session';
import { Badge, ChoiceFilter, ConfirmButton, DiffView, ErrorBanner, JsonBlock, Loading, Section, useAction, useLoad, when } from '../ui';

type Proposal = Schemas['Proposal'];
type ProposalState = Proposal['state'];
const STATES: ProposalState[] = ['draft', 'revised', 'applied', 'rejected', 'archived'];
const OPEN: ReadonlySet<string> = new Set(['draft', 'revised']);

interface Revision {
  label: string;
  artifact: unknown;
}

/**
 * The host keeps the current bytes of a proposal, not its past revisions: the console keeps every
 * revision it has seen in this tab (the one it loaded, each one saved here, and any newer one found on
 * a later visit, even after a reload), so a reviewer can compare any two of them side by side, and
 * always sees the diff of an edit before saving it. Kept in sessionStorage beside the credential and
 * cleared with it on sign-out; artifacts are reviewable content, never credentials.
 */
const REVISIONS_KEY = 'openwop.console.revisions';
const MAX_REVISIONS = 20;
const MAX_PROPOSALS = 50;

function loadSeen(): Record<string, Revision[]> {
  try {
    return JSON.parse(window.sessionStorage.getItem(REVISIONS_KEY) ?? '{}') as Record<string, Revision[]>;
  } catch {
    return {};
  }
}

function remember(p: Proposal): Revision[] {
  const seen = loadSeen();
  const key = `${p.owner.tenant}/${p.id}`;
  const list = seen[key] ?? [];
  const last = list[list.length - 1];
  if (!last || stableJson(last.artifact) !== stableJson(p.artifact)) {
    list.push({ label: `Revision ${list.length + 1} (${p.state}, ${when(p.updatedAt ?? p.createdAt)})`, artifact: p.artifact });
  }
  delete seen[key];
  seen[key] = list.slice(-MAX_REVISIONS);
  const keys = Object.keys(seen);
  for (const old of keys.slice(0, Math.max(0, keys.length - MAX_PROPOSALS))) delete seen[old];
  try {
    window.sessionStorage.setItem(REVISIONS_KEY, JSON.stringify(seen));
  } catch {
    /* storage full: the comparison still works for this page view */
  }
  return seen[key];
}

function Reviser({ proposal, onSaved }: { proposal: Proposal; onSaved: (p: Proposal) => void }) {
  const [text, setText] = useState(stableJson(proposal.artifact));
  const [note, setNote] = useState('');
  const action = useAction();
  useEffect(() => setText(stableJson(proposal.artifact)), [proposal.id, proposal.updatedAt]);
  let parsed: unknown;
  let parseError: string | null = null;
  try {
    parsed = JSON.parse(text);
  } catch (e) {
    parseError = e instanceof Error ? e.message : 'not JSON';
  }
  const changed = !parseError && stableJson(parsed) !== stableJson(proposal.artifact);
  return (
    <Section title="Revise the artifact">
      <div class="stack">
        <label for="artifact-editor">Artifact (JSON)</label>
        <textarea id="artifact-editor" value={text} onInput={(e) => setText((e.target as HTMLTextAreaElement).value)} spellcheck={false} aria-describedby="artifact-editor-status" />
        <p id="artifact-editor-status" class="muted" role="status">
          {parseError ? `Not valid JSON: ${parseError}` : changed ? 'Edited: the changes are shown below.' : 'Unchanged.'}
        </p>
        {changed ? <DiffView before={proposal.artifact} after={parsed} beforeLabel="Current revision" afterLabel="Your edit" /> : null}
        <label for="revision-note">Note (optional)</label>
        <input id="revision-note" value={note} onInput={(e) => setNote((e.target as HTMLInputElement).value)} maxLength={2000} />
        <div class="actions">
          <button
            type="button"
            class="primary"
            disabled={!changed || Boolean(action.busy)}
            onClick={() =>
              void action
                .run('revise', () => call(api.PATCH('/v1/proposals/{id}', { params: { path: { id: proposal.id } }, body: { artifact: parsed as Record<string, never>, ...(note ? { note } : {}) } })))
                .then((p) => p && (setNote(''), onSaved(p)))
            }
          >
            Save revision
          </button>
        </div>
        <ErrorBanner error={action.error} />
      </div>
    </Section>
  );
}

function ProposalDetail({ id, identity, refresh, onChanged }: { id: string; identity: Identity; refresh: number; onChanged: () => void }) {
  const loaded = useLoad(() => call(api.GET('/v1/proposals/{id}', { params: { path: { id } } })), [id, refresh]);
  const [current, setCurrent] = useState<Proposal | undefined>(undefined);
  const [revisions, setRevisions] = useState<Revision[]>([]);
  const [left, setLeft] = useState(0);
  const [right, setRight] = useState(0);
  const [notice, setNotice] = useState<string | null>(null);
  const [reason, setReason] = useState('');
  const action = useAction();

  const adopt = (p: Proposal) => {
    setCurrent(p);
    const list = remember(p);
    setRevisions(list);
    setLeft(Math.max(0, list.length - 2));
    setRight(list.length - 1);
  };
  useEffect(() => {
    if (loaded.data) adopt(loaded.data);
  }, [loaded.data]);
  useEffect(() => setNotice(null), [id]);

  const p = current && current.id === id ? current : undefined;
  const after = (n: Proposal | undefined, message: string) => {
    if (!n) return;
    adopt(n);
    setNotice(message);
    onChanged();
  };
  const open = p ? OPEN.has(p.state) : false;
  return (
    <div>
      <ErrorBanner error={loaded.error} />
      {loaded.loading && !p ? <Loading what="the proposal" /> : null}
      {p ? (
        <>
          <Section
            title={p.title ?? `${p.kind} proposal`}
            actions={
              <>
                {can(identity, 'packs:publish') && open ? (
                  <button
                    type="button"
                    class="primary"
                    disabled={Boolean(action.busy)}
                    onClick={() =>
                      void action.run('apply', () => call(api.POST('/v1/proposals/{id}/apply', { params: { path: { id } } }))).then((r) => {
                        if (!r) return;
                        after(
                          r.proposal,
                          r.status === 'applied'
                            ? `Applied: installed as ${r.installedArtifactRef ?? 'the artifact'}.`
                            : `Waiting for approval: gate ${r.pendingApprovalId ?? ''} must be granted before the artifact is installed.`,
                        );
                      })
                    }
                  >
                    Apply
                  </button>
                ) : null}
                {can(identity, 'proposals:review') && open ? (
                  <ConfirmButton
                    label="Reject"
                    confirmLabel="Reject proposal"
                    question="Reject this proposal?"
                    danger
                    disabled={Boolean(action.busy)}
                    onConfirm={() =>
                      void action
                        .run('reject', () => call(api.POST('/v1/proposals/{id}/reject', { params: { path: { id } }, body: reason ? { reason } : {} })))
                        .then((n) => after(n, 'Rejected.'))
                    }
                  />
                ) : null}
                {can(identity, 'proposals:review') && p.state !== 'archived' ? (
                  <ConfirmButton
                    label="Archive"
                    confirmLabel="Archive proposal"
                    question="Archive this proposal?"
                    disabled={Boolean(action.busy)}
                    onConfirm={() => void action.run('archive', () => call(api.DELETE('/v1/proposals/{id}', { params: { path: { id } } }))).then((n) => after(n, 'Archived.'))}
                  />
                ) : null}
              </>
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
                <Badge value={p.state} />
              </dd>
              <dt>Kind</dt>
              <dd>{p.kind}</dd>
              <dt>Id</dt>
              <dd>
                <code>{p.id}</code>
              </dd>
              <dt>Rationale</dt>
              <dd>{p.rationale ?? '—'}</dd>
              <dt>Source runs</dt>
              <dd>{p.provenance.sourceRunIds.length ? p.provenance.sourceRunIds.join(', ') : '—'}</dd>
              <dt>Proposed by</dt>
              <dd>{p.owner.principal ?? '—'}</dd>
              {p.duplicateOf ? (
                <>
                  <dt>Duplicate of</dt>
                  <dd>
                    <code>{p.duplicateOf}</code>
                  </dd>
                </>
              ) : null}
              {p.activation ? (
                <>
                  <dt>Installed as</dt>
                  <dd>
                    <code>{p.activation.installedArtifactRef}</code>
                  </dd>
                </>
              ) : null}
              <dt>Updated</dt>
              <dd>{when(p.updatedAt ?? p.createdAt)}</dd>
            </dl>
            {can(identity, 'proposals:review') && open ? (
              <label class="row">
                Reason for a rejection (optional)
                <input value={reason} onInput={(e) => setReason((e.target as HTMLInputElement).value)} maxLength={2000} />
              </label>
            ) : null}
            <JsonBlock label="Artifact (current revision)" value={p.artifact} />
          </Section>
          <Section title="Compare revisions">
            {revisions.length < 2 ? (
              <p class="muted">
                One revision seen so far. Each revision saved here, or found changed on a later visit in this tab, can be compared here side by side.
              </p>
            ) : (
              <>
                <div class="row">
                  <label>
                    Before
                    <select value={left} onChange={(e) => setLeft(Number((e.target as HTMLSelectElement).value))}>
                      {revisions.map((r, k) => (
                        <option key={k} value={k}>
                          {r.label}
                        </option>
                      ))}
                    </select>
                  </label>
                  <label>
                    After
                    <select value={right} onChange={(e) => setRight(Number((e.target as HTMLSelectElement).value))}>
                      {revisions.map((r, k) => (
                        <option key={k} value={k}>
                          {r.label}
                        </option>
                      ))}
                    </select>
                  </label>
                </div>
                <DiffView before={revisions[left]?.artifact} after={revisions[right]?.artifact} beforeLabel={revisions[left]?.label ?? ''} afterLabel={revisions[right]?.label ?? ''} />
              </>
            )}
          </Section>
          {can(identity, 'proposals:review') && open ? <Reviser proposal={p} onSaved={(n) => after(n, 'Revision saved.')} /> : null}
        </>
      ) : null}
    </div>
  );
}

type Approval = NonNullable<Awaited<ReturnType<typeof loadApprovals>>>[number];
async function loadApprovals() {
  return (await call(api.GET('/v1/approvals', { params: { query: { state: 'pending' } } }))).approvals;
}

function Approvals({ refresh, onDecided }: { refresh: number; onDecided: () => void }) {
  const list = useLoad(loadApprovals, [refresh]);
  const action = useAction();
  const [reason, setReason] = useState('');
  const decide = (a: Approval, decision: 'grant' | 'deny') =>
    void action
      .run(decision, () =>
        decision === 'grant'
          ? call(api.POST('/v1/approvals/{id}/grant', { params: { path: { id: a.id } }, body: reason ? { reason } : {} }))
          : call(api.POST('/v1/approvals/{id}/deny', { params: { path: { id: a.id } }, body: reason ? { reason } : {} })),
      )
      .then((r) => r && onDecided());
  return (
    <Section title="Approval gates">
      <ErrorBanner error={list.error ?? action.error} />
      {list.loading && !list.data ? <Loading what="approval gates" /> : null}
      {list.data && list.data.length === 0 ? <p class="muted">No gate is waiting for a decision.</p> : null}
      {list.data && list.data.length ? (
        <>
          <label class="row">
            Reason (optional, recorded with the decision)
            <input value={reason} onInput={(e) => setReason((e.target as HTMLInputElement).value)} maxLength={2000} />
          </label>
          <table class="list">
            <caption class="sr-only">Pending approval gates</caption>
            <thead>
              <tr>
                <th scope="col">Subject</th>
                <th scope="col">Requested by</th>
                <th scope="col">Quorum</th>
                <th scope="col">Expires</th>
                <th scope="col">Decision</th>
              </tr>
            </thead>
            <tbody>
              {list.data.map((a) => (
                <tr key={a.id}>
                  <td>
                    {a.subject.kind} <code>{a.subject.id}</code>
                  </td>
                  <td>{a.requestedBy}</td>
                  <td>
                    {a.granted} of {a.quorum}
                  </td>
                  <td>{when(a.expiresAt)}</td>
                  <td class="actions">
                    <button type="button" class="primary" disabled={Boolean(action.busy)} onClick={() => decide(a, 'grant')} aria-label={`Grant gate for ${a.subject.kind} ${a.subject.id}`}>
                      Grant
                    </button>
                    <button type="button" class="danger" disabled={Boolean(action.busy)} onClick={() => decide(a, 'deny')} aria-label={`Deny gate for ${a.subject.kind} ${a.subject.id}`}>
                      Deny
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      ) : null}
    </Section>
  );
}

export function ProposalsPage({ identity }: { identity: Identity }) {
  const [state, setState] = useState<ProposalState | ''>('');
  const [selected, setSelected] = useState<string | null>(null);
  const [refresh, setRefresh] = useState(0);
  const readable = can(identity, 'proposals:read');
  const list = useLoad(
    async () => (readable ? (await call(api.GET('/v1/proposals', { params: { query: state ? { state } : {} } }))).proposals : []),
    [state, refresh, readable],
  );
  const counts = useMemo(() => (list.data ?? []).length, [list.data]);
  return (
    <>
      {can(identity, 'approvals:respond') ? <Approvals refresh={refresh} onDecided={() => setRefresh((r) => r + 1)} /> : null}
      {readable ? (
        <div class="split">
          <Section title="Proposals">
            <form class="filters" onSubmit={(e) => e.preventDefault()} aria-label="Filter proposals">
              <ChoiceFilter label="State" all="All states" options={STATES} value={state} onChange={setState} />
            </form>
            <ErrorBanner error={list.error} />
            {list.loading && !list.data ? <Loading what="proposals" /> : null}
            <p class="muted" role="status">
              {list.data ? `${counts} proposal${counts === 1 ? '' : 's'}` : ''}
            </p>
            {list.data && list.data.length ? (
              <table class="list">
                <caption class="sr-only">Proposals</caption>
                <thead>
                  <tr>
                    <th scope="col">Title</th>
                    <th scope="col">Kind</th>
                    <th scope="col">State</th>
                    <th scope="col">Updated</th>
                  </tr>
                </thead>
                <tbody>
                  {list.data.map((p) => (
                    <tr key={p.id} class={selected === p.id ? 'selected' : ''}>
                      <td>
                        <button type="button" class="link" onClick={() => setSelected(p.id)}>
                          {p.title ?? p.id}
                        </button>
                      </td>
                      <td>{p.kind}</td>
                      <td>
                        <Badge value={p.state} />
                      </td>
                      <td>{when(p.updatedAt ?? p.createdAt)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            ) : null}
          </Section>
          {selected ? <ProposalDetail id={selected} identity={identity} refresh={refresh} onChanged={() => setRefresh((r) => r + 1)} /> : <p class="muted">Select a proposal to review it.</p>}
        </div>
      ) : null}
    </>
  );
}

