import { ConfigError } from './config-error';
import { envInt } from './env-int';
import type { EnvSetting } from './env-setting';

/**
 * API-key rotation (the openwop-auth-api-key-rotation profile; src/platform/identity): how long the
 * rotated-out key keeps authenticating next to its successor. A rotation asks for an overlap within
 * [minOverlapS, maxOverlapS] (default defaultOverlapS); the minimum is what discovery advertises as
 * `auth.rotation.minGraceSeconds`, the grace window every rotation is guaranteed.
 */
export interface KeyRotationSettings {
  defaultOverlapS: number;
  minOverlapS: number;
  maxOverlapS: number;
}

const YEAR_S = 365 * 86_400;

export const KEY_ROTATION_ENV_SETTINGS: EnvSetting[] = [
  { name: 'OPENWOP_KEY_ROTATION_OVERLAP_S', description: 'API-key rotation: seconds the rotated-out key keeps working next to its successor when a rotation names no overlap.', default: '86400' },
  { name: 'OPENWOP_KEY_ROTATION_MIN_OVERLAP_S', description: 'API-key rotation: the shortest overlap a rotation may ask for (advertised as `auth.rotation.minGraceSeconds`; 0 to 31536000).', default: '86400' },
  { name: 'OPENWOP_KEY_ROTATION_MAX_OVERLAP_S', description: 'API-key rotation: the longest overlap a rotation may ask for (up to 31536000, one year).', default: '2592000' },
];

export function loadKeyRotationSettings(env: NodeJS.ProcessEnv): KeyRotationSettings {
  const s: KeyRotationSettings = {
    defaultOverlapS: envInt(env, 'OPENWOP_KEY_ROTATION_OVERLAP_S', 86_400, 0, YEAR_S),
    minOverlapS: envInt(env, 'OPENWOP_KEY_ROTATION_MIN_OVERLAP_S', 86_400, 0, YEAR_S),
    maxOverlapS: envInt(env, 'OPENWOP_KEY_ROTATION_MAX_OVERLAP_S', 30 * 86_400, 0, YEAR_S),
  };
  if (s.minOverlapS > s.maxOverlapS) throw new ConfigError('OPENWOP_KEY_ROTATION_MIN_OVERLAP_S must not exceed OPENWOP_KEY_ROTATION_MAX_OVERLAP_S');
  if (s.defaultOverlapS < s.minOverlapS || s.defaultOverlapS > s.maxOverlapS) {
    throw new ConfigError(`OPENWOP_KEY_ROTATION_OVERLAP_S (${s.defaultOverlapS}) must lie within OPENWOP_KEY_ROTATION_MIN_OVERLAP_S (${s.minOverlapS}) and OPENWOP_KEY_ROTATION_MAX_OVERLAP_S (${s.maxOverlapS})`);
  }
  return s;
}
