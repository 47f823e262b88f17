import { useEffect, useState } from 'preact/hooks';
import { findPendingGate } from '../../api/approvals';
import { applyProposal, archiveProposal, getProposal, OPEN_STATES, Proposal, rejectProposal } from '../../api/proposals';
import { isRunId, link } from '../../routes';
import { can, Identity } from '../../session';
import { Badge, ConfirmButton, DiffView, ErrorBanner, Facts, JsonBlock, Loading, Notice, Section, ShortId, useAction, useLoad, when } from '../../ui';
import { GateDecision } from '../approvals/gate-decision';
import { remember, Revision } from './revisions';
import { Reviser } from './reviser';

function CompareRevisions({ revisions }: { revisions: Revision[] }) {
  const [left, setLeft] = useState(Math.max(0, revisions.length - 2));
  const [right, setRight] = useState(revisions.length - 1);
  useEffect(() => (setLeft(Math.max(0, revisions.length - 2)), setRight(revisions.length - 1)), [revisions.length]);
  const pick = (label: string, value: number, set: (n: number) => void) => (
    <label>
      {label}
      <select value={value} onChange={(e) => set(Number((e.target as HTMLSelectElement).value))}>
        {revisions.map((r, k) => (
          <option key={k} value={k}>
            {r.label}
          </option>
        ))}
      </select>
    </label>
  );
  return (
    <Section title="Compare revisions">
      {revisions.length < 2 ? (
        <p class="muted">One revision seen so far. Each revision saved here, or found changed on a later visit in this tab, can be compared here side by side.</p>
      ) : (
        <>
          <div class="row">
            {pick('Before', left, setLeft)}
            {pick('After', right, setRight)}
          </div>
          <DiffView before={revisions[left]?.artifact} after={revisions[right]?.artifact} beforeLabel={revisions[left]?.label ?? ''} afterLabel={revisions[right]?.label ?? ''} />
        </>
      )}
    </Section>
  );
}

/** One proposal: its artifact and provenance, its revisions compared, revise, apply (or its approval gate), reject, archive. */
export function ProposalDetail({ id, identity, onChanged }: { id: string; identity: Identity; onChanged: () => void }) {
  const loaded = useLoad(() => getProposal(id), [id]);
  const [current, setCurrent] = useState<Proposal | undefined>(undefined);
  const [revisions, setRevisions] = useState<Revision[]>([]);
  const [notice, setNotice] = useState<string | null>(null);
  const [reason, setReason] = useState('');
  const [gateId, setGateId] = useState<string | null>(null);
  const action = useAction();
  const adopt = (p: Proposal) => {
    setCurrent(p);
    setRevisions(remember(p));
  };
  useEffect(() => {
    if (loaded.data) adopt(loaded.data);
  }, [loaded.data]);
  useEffect(() => setNotice(null), [id]);
  const p = current && current.id === id ? current : undefined;
  const open = p ? OPEN_STATES.has(p.state) : false;
  // An open proposal may wait on an approval gate opened by an earlier apply.
  const mayRespond = can(identity, 'approvals:respond');
  useEffect(() => {
    setGateId(null);
    if (!open || !mayRespond) return;
    let live = true;
    findPendingGate('proposal', id).then((g) => live && g && setGateId(g.id), () => undefined);
    return () => {
      live = false;
    };
  }, [id, open, mayRespond]);
  const after = (n: Proposal | undefined, message: string) => {
    if (!n) return;
    adopt(n);
    setNotice(message);
    onChanged();
  };
  const apply = () =>
    void action.run('apply', () => applyProposal(id)).then((r) => {
      if (!r) return;
      if (r.status !== 'applied') setGateId(r.pendingApprovalId ?? null);
      after(r.proposal, r.status === 'applied' ? `Applied: installed as ${r.installedArtifactRef ?? 'the artifact'}.` : `Waiting for approval: gate ${r.pendingApprovalId ?? ''} must be granted before the artifact is installed.`);
    });
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
                  <button type="button" class="primary" disabled={Boolean(action.busy)} onClick={apply}>
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
                    onConfirm={() => void action.run('reject', () => rejectProposal(id, reason || undefined)).then((n) => after(n, 'Rejected.'))}
                  />
                ) : null}
                {can(identity, 'proposals:review') && p.state !== 'archived' ? (
                  <ConfirmButton
                    label="Archive"
                    confirmLabel="Archive proposal"
                    question="Archive this proposal?"
                    disabled={Boolean(action.busy)}
                    onConfirm={() => void action.run('archive', () => archiveProposal(id)).then((n) => after(n, 'Archived.'))}
                  />
                ) : null}
              </>
            }
          >
            <Notice text={notice} />
            <ErrorBanner error={action.error} />
            <Facts
              items={[
                ['State', <Badge value={p.state} />],
                ['Kind', p.kind],
                ['Id', <ShortId id={p.id} what="proposal id" />],
                ['Rationale', p.rationale ?? '—'],
                [
                  'Source runs',
                  p.provenance.sourceRunIds.length
                    ? p.provenance.sourceRunIds.map((r, k) => (
                        <span key={r}>
                          {k ? ', ' : ''}
                          {isRunId(r) ? <ShortId id={r} what="run" href={link.run(r)} /> : <code>{r}</code>}
                        </span>
                      ))
                    : '—',
                ],
                ['Proposed by', p.owner.principal ?? '—'],
                p.duplicateOf && ['Duplicate of', <a href={link.proposal(p.duplicateOf)}>{p.duplicateOf}</a>],
                p.activation && ['Installed as', <code>{p.activation.installedArtifactRef}</code>],
                ['Updated', when(p.updatedAt ?? p.createdAt)],
              ]}
            />
            {can(identity, 'proposals:review') && open ? (
              <label class="row">
                Reason for a rejection (optional)
                <input value={reason} onInput={(e) => setReason((e.target as HTMLInputElement).value)} maxLength={2000} />
              </label>
            ) : null}
            <JsonBlock label="Artifact (current revision)" value={p.artifact} />
          </Section>
          {gateId && open ? (
            <Section title="Approval gate">
              <GateDecision gateId={gateId} subject={`gate for proposal ${p.id}`} title={p.title} identity={identity} onDecided={() => (loaded.reload(), onChanged())} />
            </Section>
          ) : null}
          <CompareRevisions revisions={revisions} />
          {can(identity, 'proposals:review') && open ? <Reviser proposal={p} onSaved={(n) => after(n, 'Revision saved.')} /> : null}
        </>
      ) : null}
    </div>
  );
}
