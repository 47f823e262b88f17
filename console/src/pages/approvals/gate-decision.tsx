import { useState } from 'preact/hooks';
import { Approval, decideApproval, getApproval, resolveApproval } from '../../api/approvals';
import { link } from '../../routes';
import { can, Identity } from '../../session';
import { ErrorBanner, Facts, Loading, ShortId, useAction, useLoad, when } from '../../ui';

/** Whether the credential may decide on a gate (its required scope; the host checks the required role too). */
export function mayDecide(identity: Identity, a: Pick<Approval, 'requiredScope'> | undefined): boolean {
  return can(identity, 'approvals:respond') && (!a || can(identity, a.requiredScope));
}

/** A clarification or external-event interrupt: resolved with a JSON resume value (checked by the host against its resume schema), or denied. */
function ResolveForm({ approval, subject, onDecided }: { approval: Approval; subject: string; onDecided: (a: Approval) => void }) {
  const [value, setValue] = useState(approval.kind === 'clarification' ? JSON.stringify({ answers: {} }) : '{}');
  const [parseError, setParseError] = useState<string | null>(null);
  const action = useAction();
  const id = `resume-${approval.id}`;
  const resolve = () => {
    let parsed: Record<string, unknown>;
    try {
      parsed = JSON.parse(value) as Record<string, unknown>;
      if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('not an object');
    } catch {
      setParseError('The resume value must be a JSON object.');
      return;
    }
    setParseError(null);
    void action.run('resolve', () => resolveApproval(approval.id, parsed).then(() => getApproval(approval.id))).then((a) => a && onDecided(a));
  };
  const deny = () => void action.run('deny', () => decideApproval(approval.id, 'deny')).then((a) => a && onDecided(a));
  return (
    <div class="decision">
      <label for={id}>Resume value (JSON{approval.kind === 'clarification' ? ': {"answers": {"<question id>": "..."}}' : ''})</label>
      <textarea id={id} value={value} rows={3} onInput={(e) => setValue((e.target as HTMLTextAreaElement).value)} />
      <div class="actions">
        <button type="button" class="primary" disabled={Boolean(action.busy)} onClick={resolve} aria-label={`Resolve ${subject}`}>
          Resolve
        </button>
        <button type="button" class="danger" disabled={Boolean(action.busy)} onClick={deny} aria-label={`Deny ${subject}`}>
          Deny
        </button>
      </div>
      {parseError ? <p class="error">{parseError}</p> : null}
      <ErrorBanner error={action.error} />
    </div>
  );
}

/** Grant and Deny, with an optional reason recorded with the decision (Resolve with a value for a clarification or an external event). */
export function DecisionButtons({ approval, subject, onDecided }: { approval: Approval; subject: string; onDecided: (a: Approval) => void }) {
  if (approval.kind !== 'approval') return <ResolveForm approval={approval} subject={subject} onDecided={onDecided} />;
  return <GrantDeny approval={approval} subject={subject} onDecided={onDecided} />;
}

function GrantDeny({ approval, subject, onDecided }: { approval: Approval; subject: string; onDecided: (a: Approval) => void }) {
  const [reason, setReason] = useState('');
  const action = useAction();
  const decide = (d: 'grant' | 'deny') => void action.run(d, () => decideApproval(approval.id, d, reason.trim() || undefined)).then((a) => a && onDecided(a));
  const id = `reason-${approval.id}`;
  return (
    <div class="decision">
      <label for={id}>Reason (optional, recorded with the decision)</label>
      <input id={id} value={reason} onInput={(e) => setReason((e.target as HTMLInputElement).value)} maxLength={2000} />
      <div class="actions">
        <button type="button" class="primary" disabled={Boolean(action.busy)} onClick={() => decide('grant')} aria-label={`Grant ${subject}`}>
          Grant
        </button>
        <button type="button" class="danger" disabled={Boolean(action.busy)} onClick={() => decide('deny')} aria-label={`Deny ${subject}`}>
          Deny
        </button>
      </div>
      <ErrorBanner error={action.error} />
    </div>
  );
}

/**
 * A pending approval gate where its subject is shown (a run's waiting step, a proposal being applied): who
 * asked, the quorum so far, when it expires, and Grant/Deny for a credential that may decide. One that may
 * not sees the gate and where it is decided.
 */
export function GateDecision({ gateId, subject, title, identity, onDecided }: { gateId: string; subject: string; title?: string; identity: Identity; onDecided: () => void }) {
  const readable = can(identity, 'approvals:respond');
  const gate = useLoad(() => (readable ? getApproval(gateId) : Promise.resolve(undefined)), [gateId, readable]);
  const a = gate.data;
  return (
    <div class="gate" role="group" aria-label={`Approval gate for ${subject}`}>
      <Facts
        items={[
          (a?.title ?? title) && ['Title', a?.title ?? title],
          ['Gate', <ShortId id={gateId} what="gate id" href={link.approvals()} />],
          a && ['Kind', a.kind],
          a && ['State', a.state],
          a && ['Requested by', a.requestedBy],
          a && ['Quorum', `${a.granted} of ${a.quorum} granted`],
          a && ['Expires', when(a.expiresAt)],
        ]}
      />
      <ErrorBanner error={gate.error} />
      {readable && gate.loading && !a ? <Loading what="the approval gate" /> : null}
      {a && a.state === 'pending' && mayDecide(identity, a) ? <DecisionButtons approval={a} subject={subject} onDecided={() => (gate.reload(), onDecided())} /> : null}
      {!readable || (a && !mayDecide(identity, a)) ? (
        <p class="muted">Deciding needs the {a?.requiredScope ?? 'approvals:respond'} scope; a principal holding it grants or denies this gate on the Approvals page.</p>
      ) : null}
    </div>
  );
}
