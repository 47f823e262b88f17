import { ConfigError } from './config-error';
import { loadAdmissionSettings } from './admission-settings';

describe('admission and fair-scheduling settings', () => {
  it('defaults: no in-flight cap, Retry-After 5 s, no tenant cap, fair claims off', () => {
    expect(loadAdmissionSettings({})).toEqual({ inflightCap: 0, retryAfterSeconds: 5, tenantMaxActiveRuns: 0, fairClaims: false });
  });

  it('reads each, and a tenant cap turns fair claims on by itself', () => {
    expect(loadAdmissionSettings({ OPENWOP_RUN_INFLIGHT_CAP: '100', OPENWOP_BACKPRESSURE_RETRY_AFTER_SECONDS: '0', OPENWOP_FAIR_CLAIMS: 'true' })).toEqual({ inflightCap: 100, retryAfterSeconds: 0, tenantMaxActiveRuns: 0, fairClaims: true });
    expect(loadAdmissionSettings({ OPENWOP_TENANT_MAX_ACTIVE_RUNS: '3', OPENWOP_FAIR_CLAIMS: 'false' })).toEqual(expect.objectContaining({ tenantMaxActiveRuns: 3, fairClaims: true }));
  });

  it.each([
    ['OPENWOP_RUN_INFLIGHT_CAP', '-1', /OPENWOP_RUN_INFLIGHT_CAP must be a whole number/],
    ['OPENWOP_RUN_INFLIGHT_CAP', 'many', /OPENWOP_RUN_INFLIGHT_CAP must be a whole number/],
    ['OPENWOP_BACKPRESSURE_RETRY_AFTER_SECONDS', '86401', /OPENWOP_BACKPRESSURE_RETRY_AFTER_SECONDS must be between 0 and 86400/],
    ['OPENWOP_TENANT_MAX_ACTIVE_RUNS', '2.5', /OPENWOP_TENANT_MAX_ACTIVE_RUNS must be a whole number/],
    ['OPENWOP_FAIR_CLAIMS', 'sometimes', /OPENWOP_FAIR_CLAIMS must be true or false/],
  ])('refuses %s=%s with its message', (name, value, message) => {
    expect(() => loadAdmissionSettings({ [name]: value })).toThrow(ConfigError);
    expect(() => loadAdmissionSettings({ [name]: value })).toThrow(message);
  });
});
