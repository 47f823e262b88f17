import { loadHostConfig } from '../../platform/config/host-config';
import { proposalsSettings } from './proposals.settings';

describe('proposals settings', () => {
  it('defaults to direct-rbac with a one-approver, fail-closed gate policy', () => {
    const s = proposalsSettings(loadHostConfig({}));
    expect(s.activation).toBe('direct-rbac');
    expect(s.approval).toMatchObject({ requiredScope: 'approvals:respond', quorum: 1 });
    expect(s.approval.requiredRole).toBeUndefined();
  });

  it('reads OPENWOP_PROPOSALS_ACTIVATION and refuses other values', () => {
    expect(proposalsSettings(loadHostConfig({ OPENWOP_PROPOSALS_ACTIVATION: 'approval-gate' })).activation).toBe('approval-gate');
    expect(() => loadHostConfig({ OPENWOP_PROPOSALS_ACTIVATION: 'auto' })).toThrow(/direct-rbac or approval-gate/);
  });

  it('refuses an unknown required role at start', () => {
    const config = loadHostConfig({});
    config.file = { proposals: { approval: { requiredRole: 'owner' } } };
    expect(() => proposalsSettings(config)).toThrow(/unknown role "owner"/);
    config.file = { proposals: { approval: { requiredRole: 'admin', quorum: 3 } } };
    expect(proposalsSettings(config).approval).toMatchObject({ requiredRole: 'admin', quorum: 3 });
  });
});
