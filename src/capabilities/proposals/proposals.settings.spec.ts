import { loadHostConfig } from '../../platform/config/host-config';
import { proposalsSettings } from './proposals.settings';

describe('proposals settings', () => {
  it('defaults to direct-rbac', () => {
    expect(proposalsSettings(loadHostConfig({})).activation).toBe('direct-rbac');
  });

  it('reads OPENWOP_PROPOSALS_ACTIVATION and refuses other values', () => {
    expect(proposalsSettings(loadHostConfig({ OPENWOP_PROPOSALS_ACTIVATION: 'approval-gate' })).activation).toBe('approval-gate');
    expect(() => loadHostConfig({ OPENWOP_PROPOSALS_ACTIVATION: 'auto' })).toThrow(/direct-rbac or approval-gate/);
  });
});
