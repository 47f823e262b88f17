import type { EnvSetting } from './env-setting';

/**
 * Which protocol majors the host serves (docs/versions.md). Major 1 is always served and is the
 * preferred version through the overlap; major 2 is listed in `protocolVersions` only when asked for,
 * because listing it claims the whole v2 path space and representations (versioning.md §1).
 */
export interface ProtocolSettings {
  /** The served majors, ascending; always contains 1. */
  majors: number[];
}

export class ProtocolSettingError extends Error {}

export const PROTOCOL_ENV_SETTINGS: EnvSetting[] = [
  {
    name: 'OPENWOP_PROTOCOL_MAJORS',
    default: '1',
    description:
      'The OpenWOP protocol majors served and listed in discovery `protocolVersions`: `1`, or `1,2` to also serve major 2 at the unversioned paths to clients sending `OpenWOP-Version: 2` (incomplete: see docs/versions.md). Major 1 stays the preferred version.',
  },
];

const KNOWN_MAJORS = [1, 2];

export function loadProtocolSettings(env: NodeJS.ProcessEnv): ProtocolSettings {
  const raw = env.OPENWOP_PROTOCOL_MAJORS?.trim();
  if (raw === undefined || raw === '') return { majors: [1] };
  const items = raw.split(',').map((s) => s.trim());
  const majors = [...new Set(items.map(Number))].sort((a, b) => a - b);
  if (items.some((s) => !/^[0-9]+$/.test(s)) || majors.some((m) => !KNOWN_MAJORS.includes(m)) || !majors.includes(1)) {
    throw new ProtocolSettingError(`OPENWOP_PROTOCOL_MAJORS must be 1 or 1,2 (major 1 is always served), got "${raw}"`);
  }
  return { majors };
}
