import { ConfigError } from './config-error';
import { envInt } from './env-int';
import type { EnvSetting } from './env-setting';

/**
 * The agent workspace (RFC 0059, src/capabilities/workspace): whether its file store is served, and
 * the ceilings discovery advertises as `workspace.maxFileBytes`, `maxFiles` and `maxVersions`.
 */
export interface WorkspaceSettings {
  enabled: boolean;
  /** The largest file content, in UTF-8 bytes; a larger PUT is `413 workspace_too_large`. */
  maxFileBytes: number;
  /** Files one tenant·workspace may hold (deleted ones do not count); one more is `413 workspace_too_large`. */
  maxFiles: number;
  /** Versions of a file kept, the current one included; older ones are pruned on write. */
  maxVersions: number;
}

export const WORKSPACE_ENV_SETTINGS: EnvSetting[] = [
  { name: 'OPENWOP_WORKSPACE', description: 'Serve the agent workspace file store (`/v1/host/workspace/files`, RFC 0059) and advertise `workspace`; `false` answers its routes `501 capability_not_provided`.', default: 'true' },
  { name: 'OPENWOP_WORKSPACE_MAX_FILE_BYTES', description: 'Agent workspace: the largest file content in UTF-8 bytes (`workspace.maxFileBytes`); must stay below `OPENWOP_JSON_MAX_STRING` and 1024 bytes under `OPENWOP_MAX_BODY_BYTES`, so an oversized PUT still reaches the store and is answered `413 workspace_too_large`; unset, it is lowered to fit those limits when they are smaller.', default: '131072' },
  { name: 'OPENWOP_WORKSPACE_MAX_FILES', description: 'Agent workspace: files one tenant·workspace may hold (`workspace.maxFiles`, 1 to 10000); a PUT creating one more is `413 workspace_too_large`.', default: '256' },
  { name: 'OPENWOP_WORKSPACE_MAX_VERSIONS', description: 'Agent workspace: versions of a file kept, the current one included (`workspace.maxVersions`, 1 to 1000); older versions are pruned on write and read as `404 not_found`.', default: '20' },
];

export function loadWorkspaceSettings(env: NodeJS.ProcessEnv): WorkspaceSettings {
  const raw = (env.OPENWOP_WORKSPACE ?? '').trim().toLowerCase();
  if (raw !== '' && raw !== 'true' && raw !== 'false') throw new ConfigError(`OPENWOP_WORKSPACE must be true or false, got "${env.OPENWOP_WORKSPACE}"`);
  return {
    enabled: raw !== 'false',
    maxFileBytes: envInt(env, 'OPENWOP_WORKSPACE_MAX_FILE_BYTES', defaultMaxFileBytes(env), 1, 1024 * 1024 * 1024),
    maxFiles: envInt(env, 'OPENWOP_WORKSPACE_MAX_FILES', 256, 1, 10_000),
    maxVersions: envInt(env, 'OPENWOP_WORKSPACE_MAX_VERSIONS', 20, 1, 1000),
  };
}

/**
 * The default ceiling, 128 KiB, lowered to fit a host whose body or JSON string limit is smaller (an
 * operator who lowers `OPENWOP_MAX_BODY_BYTES` is not also made to lower this); an explicit value
 * that does not fit is refused at start (checkWorkspaceCeiling).
 */
function defaultMaxFileBytes(env: NodeJS.ProcessEnv): number {
  const body = envInt(env, 'OPENWOP_MAX_BODY_BYTES', 1048576, 1024, 1024 * 1024 * 1024);
  const string = envInt(env, 'OPENWOP_JSON_MAX_STRING', 262144, 1, 1024 * 1024 * 1024);
  return Math.max(1, Math.min(131_072, body - 1024, string - 1));
}

/**
 * The ceiling must be reachable: a body whose content is one byte over it has to pass the host's
 * JSON guard (strings up to `maxStringLength` characters) and body limit, or the caller would get
 * `payload_too_large` where the protocol names `workspace_too_large`.
 */
export function checkWorkspaceCeiling(s: WorkspaceSettings, host: { maxRequestBodyBytes: number; json: { maxStringLength: number } }): void {
  if (!s.enabled) return;
  if (s.maxFileBytes >= host.json.maxStringLength) {
    throw new ConfigError(`OPENWOP_WORKSPACE_MAX_FILE_BYTES (${s.maxFileBytes}) must be below OPENWOP_JSON_MAX_STRING (${host.json.maxStringLength})`);
  }
  if (s.maxFileBytes + 1024 > host.maxRequestBodyBytes) {
    throw new ConfigError(`OPENWOP_WORKSPACE_MAX_FILE_BYTES (${s.maxFileBytes}) must be at least 1024 bytes below OPENWOP_MAX_BODY_BYTES (${host.maxRequestBodyBytes})`);
  }
}
