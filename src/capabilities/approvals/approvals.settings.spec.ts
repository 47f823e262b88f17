import { loadHostConfig } from '../../platform/config/host-config';
import { approvalsSettings } from './approvals.settings';

describe('approvals settings', () => {
  it('defaults to a one-approver, fail-closed gate policy', () => {
    const s = approvalsSettings(loadHostConfig({}));
    expect(s).toMatchObject({ requiredScope: 'approvals:respond', quorum: 1, allowSelfApproval: true });
    expect(s.requiredRole).toBeUndefined();
  });

  it('refuses an unknown required role at start', () => {
    const config = loadHostConfig({});
    config.file = { proposals: { approval: { requiredRole: 'owner' } } };
    expect(() => approvalsSettings(config)).toThrow(/unknown role "owner"/);
    config.file = { proposals: { approval: { requiredRole: 'admin', quorum: 3 } } };
    expect(approvalsSettings(config)).toMatchObject({ requiredRole: 'admin', quorum: 3 });
    config.file = { proposals: { approval: { allowSelfApproval: false } } };
    expect(approvalsSettings(config)).toMatchObject({ allowSelfApproval: false });
  });
});
