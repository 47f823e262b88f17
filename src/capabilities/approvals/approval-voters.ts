import { ForbiddenError, ValidationError } from '../../platform/errors/domain-error';
import type { Principal } from '../../platform/identity/principal';
import { ACT_AS_SCOPE } from '../../platform/identity/scopes';

/**
 * The key a voter is counted under: Unicode NFKC, trimmed, case-folded (upper then lower case, so
 * `ß` and `SS`, `ς` and `Σ` fold together). `alice`, ` ALICE ` and `Ａｌｉｃｅ` are one voter; an
 * authenticated principal voting for itself is counted under the key of its principal id, in the same
 * namespace, so a named voter naming a principal is that principal.
 */
export function voterKey(name: string): string {
  return name.normalize('NFKC').trim().toUpperCase().toLowerCase().normalize('NFKC');
}

/** What a gate holds about who may vote on it (its row's columns). */
export interface VoterGate {
  kind: string;
  /** Who opened it: the run's owner for a run step, the applying principal for a proposal. */
  requestedBy: string;
  allowSelfApproval: boolean;
  /** The scope the workflow designated to record named votes (`namedVoters.recordedBy`), if any. */
  namedVotersScope: string | null;
  data: Record<string, unknown> | null;
}

/** Whom a decision counts for: the voter as shown, the key it is counted under, and whether it is cast for someone else. */
export interface CountedVoter {
  voter: string;
  key: string;
  actingAs: boolean;
}

/**
 * Whom a decision counts for, and whether the caller may cast it. A quorum counts distinct
 * authenticated principals: without a named voter (or naming itself) the caller votes for itself.
 * Naming another voter is acting-as, a designated permission: `approvals:act-as`, or the scope the
 * gate's `namedVoters.recordedBy` names, and only on a gate whose quorum the workflow set (the
 * host's own quorum counts principals). A gate that refuses self-approval refuses a grant by, or for,
 * the principal that opened it. A gate naming its approvers (`data.approversList`) counts only
 * them. A signed token's decision (external events only) names no voter.
 */
export function countedVoter(p: Principal, gate: VoterGate, decision: 'granted' | 'denied', named: string | undefined, viaToken: boolean): CountedVoter {
  const own = voterKey(p.principal);
  let voter = p.principal;
  let key = own;
  if (named !== undefined) {
    key = voterKey(named);
    if (!key) throw new ValidationError('resumeValue.voter is empty once trimmed and normalized.', { field: 'resumeValue.voter' });
    if (key !== own) voter = named.normalize('NFKC').trim();
  }
  const actingAs = key !== own;
  if (actingAs && !viaToken) {
    const workflowQuorum = (gate.data as { quorumSource?: string } | null)?.quorumSource === 'workflow';
    if (!workflowQuorum) {
      throw new ForbiddenError('This gate counts the deciding principals: a named voter other than the caller is accepted only on a gate whose quorum the workflow set (requiredApprovals).', {
        field: 'voter',
      });
    }
    const designated = gate.namedVotersScope;
    if (!p.scopes.has(ACT_AS_SCOPE) && !(designated && p.scopes.has(designated))) {
      const requiredScopes = designated ? [ACT_AS_SCOPE, designated] : [ACT_AS_SCOPE];
      throw new ForbiddenError(
        `Voting as "${voter}" is acting-as: it needs ${ACT_AS_SCOPE}${designated ? ` or ${designated} (the gate's namedVoters.recordedBy)` : ''}. Without it a credential votes only for its own principal (omit voter).`,
        { field: 'voter', requiredScopes, anyOf: true },
      );
    }
  }
  if (decision === 'granted' && gate.kind === 'approval' && !gate.allowSelfApproval) {
    const creator = voterKey(gate.requestedBy);
    if (own === creator || key === creator) {
      throw new ForbiddenError(`This gate refuses self-approval: "${gate.requestedBy}" requested it and can neither approve it nor record approvals on it.`, {
        selfApproval: false,
        requestedBy: gate.requestedBy,
      });
    }
  }
  // RFC 0173 §B: a gate naming its approvers (`approversList`, principal refs) is resolved by them
  // only, whoever else holds the scope, for a grant as for a reject.
  const approvers = (gate.data as { approversList?: unknown } | null)?.approversList;
  if (gate.kind === 'approval' && Array.isArray(approvers) && approvers.length && !approvers.some((a) => typeof a === 'string' && voterKey(a) === key)) {
    throw new ForbiddenError(`"${voter}" is not among the approvers this gate names (approversList).`, { field: 'voter', reason: 'not-an-approver' });
  }
  return { voter, key, actingAs };
}
