import { useState } from 'preact/hooks';
import { Approval, decideApproval, getApproval } from '../../api/approvals';
import { link } from '../../routes';
import { can, Identity } from '../../session';
import { ErrorBanner, Facts, Loading, ShortId, useAction, useLoad, when } from '../../ui';

/** Whether the credential may decide on a gate (its required scope; the host checks the required role too). */
export function mayDecide(identity: Identity, a: Pick<Approval, 'requiredScope'> | undefined): boolean {
  return can(identity, 'approvals:respond') && (!a || can(identity, a.requiredScope));
}

/** Grant and Deny, with an optional reason recorded with the decision. */
export function DecisionButtons({ approval, subject, onDecided }: { approval: Approval; subject: string; onDecided: (a: Approval) => void }) {
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
          title && ['Title', title],
          ['Gate', <ShortId id={gateId} what="gate id" href={link.approvals()} />],
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
