import { ConfigError } from './config-error';
import { loadKeyRotationSettings } from './key-rotation-settings';

describe('key rotation settings', () => {
  it('defaults to a 24-hour overlap, guaranteed as the minimum, up to 30 days', () => {
    expect(loadKeyRotationSettings({})).toEqual({ defaultOverlapS: 86_400, minOverlapS: 86_400, maxOverlapS: 2_592_000 });
    expect(loadKeyRotationSettings({ OPENWOP_KEY_ROTATION_MIN_OVERLAP_S: '0', OPENWOP_KEY_ROTATION_OVERLAP_S: '60' })).toEqual({ defaultOverlapS: 60, minOverlapS: 0, maxOverlapS: 2_592_000 });
  });

  it.each([
    [{ OPENWOP_KEY_ROTATION_OVERLAP_S: 'day' }, /OPENWOP_KEY_ROTATION_OVERLAP_S must be a whole number/],
    [{ OPENWOP_KEY_ROTATION_MAX_OVERLAP_S: '31536001' }, /OPENWOP_KEY_ROTATION_MAX_OVERLAP_S must be between 0 and 31536000/],
    [{ OPENWOP_KEY_ROTATION_MIN_OVERLAP_S: '100', OPENWOP_KEY_ROTATION_MAX_OVERLAP_S: '50' }, /MIN_OVERLAP_S must not exceed/],
    [{ OPENWOP_KEY_ROTATION_OVERLAP_S: '60' }, /OPENWOP_KEY_ROTATION_OVERLAP_S \(60\) must lie within/],
  ])('refuses %j', (env, message) => {
    expect(() => loadKeyRotationSettings(env)).toThrow(ConfigError);
    expect(() => loadKeyRotationSettings(env)).toThrow(message);
  });
});
