import type { Principal } from '../../platform/identity/principal';
import { countedVoter, VoterGate, voterKey } from './approval-voters';

const principal = (name: string, scopes: string[] = ['approvals:respond']): Principal => ({ tenant: 't', principal: name, scopes: new Set(scopes), kind: 'api-key' });
const gate = (over: Partial<VoterGate> = {}): VoterGate => ({
  kind: 'approval',
  requestedBy: 'owner',
  allowSelfApproval: true,
  namedVotersScope: null,
  data: { quorumSource: 'workflow' },
  ...over,
});
const code = (f: () => unknown): string | undefined => {
  try {
    f();
    return undefined;
  } catch (e) {
    return `${(e as { status: number }).status} ${(e as { code: string }).code}`;
  }
};

describe('approval voters', () => {
  it('folds NFKC forms, surrounding space and case into one key', () => {
    for (const v of ['alice', 'ALICE', ' Alice\u00a0', 'Ａｌｉｃｅ', 'ａｌｉｃｅ']) expect([v, voterKey(v)]).toEqual([v, 'alice']);
    expect(voterKey('STRASSE')).toBe(voterKey('straße'));
    expect(voterKey('ΟΔΟΣ')).toBe(voterKey('οδος'));
    expect(voterKey('ﬁle')).toBe('file');
    expect(voterKey('alice')).not.toBe(voterKey('alicé'));
    expect(voterKey(' \u3000 ')).toBe('');
  });

  it('counts the caller for itself, and a name that folds to it is not acting-as', () => {
    expect(countedVoter(principal('Mallory'), gate(), 'granted', undefined, false)).toEqual({ voter: 'Mallory', key: 'mallory', actingAs: false });
    expect(countedVoter(principal('mallory'), gate(), 'granted', ' MALLORY ', false)).toEqual({ voter: 'mallory', key: 'mallory', actingAs: false });
  });

  it('needs approvals:act-as or the designated scope to vote for someone else', () => {
    expect(code(() => countedVoter(principal('mallory'), gate(), 'granted', 'alice', false))).toBe('403 forbidden');
    expect(code(() => countedVoter(principal('mallory'), gate(), 'denied', 'alice', false))).toBe('403 forbidden');
    expect(countedVoter(principal('clerk', ['approvals:respond', 'approvals:act-as']), gate(), 'granted', 'Ａｌｉｃｅ ', false)).toEqual({ voter: 'Alice', key: 'alice', actingAs: true });
    expect(countedVoter(principal('clerk'), gate({ namedVotersScope: 'approvals:respond' }), 'granted', 'bob', false)).toMatchObject({ key: 'bob', actingAs: true });
    expect(code(() => countedVoter(principal('clerk'), gate({ namedVotersScope: 'panel:record' }), 'granted', 'bob', false))).toBe('403 forbidden');
    // The host's own quorum counts principals, whatever the caller holds.
    expect(code(() => countedVoter(principal('clerk', ['approvals:respond', 'approvals:act-as']), gate({ data: null }), 'granted', 'bob', false))).toBe('403 forbidden');
    expect(code(() => countedVoter(principal('clerk', ['approvals:act-as']), gate(), 'granted', ' ', false))).toBe('400 validation_error');
  });

  it('refuses self-approval by, for and through the requester when the gate says so; its rejections pass', () => {
    const fourEyes = gate({ allowSelfApproval: false });
    const clerk = principal('clerk', ['approvals:respond', 'approvals:act-as']);
    expect(code(() => countedVoter(principal('OWNER'), fourEyes, 'granted', undefined, false))).toBe('403 forbidden');
    expect(code(() => countedVoter(clerk, fourEyes, 'granted', 'owner', false))).toBe('403 forbidden');
    expect(code(() => countedVoter(principal('owner', ['approvals:act-as']), fourEyes, 'granted', 'dave', false))).toBe('403 forbidden');
    expect(countedVoter(principal('owner'), fourEyes, 'denied', undefined, false)).toMatchObject({ key: 'owner' });
    expect(countedVoter(clerk, fourEyes, 'granted', 'dave', false)).toMatchObject({ key: 'dave' });
    expect(countedVoter(principal('owner'), gate(), 'granted', undefined, false)).toMatchObject({ key: 'owner' });
  });

  it('counts only the principals a gate names in approversList, for a grant and a reject, folded like any voter', () => {
    const listed = gate({ data: { quorumSource: 'workflow', approversList: ['urn:conformance:listed-approver', 'Alice'] } });
    expect(code(() => countedVoter(principal('mallory'), listed, 'granted', undefined, false))).toBe('403 forbidden');
    expect(code(() => countedVoter(principal('mallory'), listed, 'denied', undefined, false))).toBe('403 forbidden');
    expect(countedVoter(principal('ALICE'), listed, 'granted', undefined, false)).toMatchObject({ key: 'alice' });
    expect(countedVoter(principal('urn:conformance:listed-approver'), listed, 'denied', undefined, false)).toMatchObject({ actingAs: false });
    // Acting-as a listed approver is still acting-as (it needs its permission), and naming an unlisted one is refused.
    const clerk = principal('clerk', ['approvals:respond', 'approvals:act-as']);
    expect(countedVoter(clerk, listed, 'granted', 'alice', false)).toMatchObject({ key: 'alice', actingAs: true });
    expect(code(() => countedVoter(clerk, listed, 'granted', 'bob', false))).toBe('403 forbidden');
    // Not an approval, or no list: nothing changes.
    expect(countedVoter(principal('mallory'), gate({ kind: 'clarification', data: { approversList: ['alice'] } }), 'granted', undefined, false)).toMatchObject({ key: 'mallory' });
  });
});
