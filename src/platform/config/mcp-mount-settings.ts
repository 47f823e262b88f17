import type { EnvSetting } from './env-setting';

/**
 * A refused OPENWOP_MCP_* mount setting. loadHostConfig turns it into its ConfigError (this file does
 * not import host-config: host-config imports it). The platform declares and reads the MCP server
 * mount's settings so that HostConfig carries them without the platform importing src/transport/mcp,
 * and so that the tool catalog's MCP advertiser knows whether the mount owns the `mcp` block.
 */
export class McpMountSettingError extends Error {}

/** The host's MCP server mount (src/transport/mcp). */
export interface McpMountConfig {
  /** Whether `/v1/host/openwop/mcp` is served (and advertised). */
  enabled: boolean;
  /** The mount's path. */
  path: string;
  /** The absolute URL discovery advertises in `mcp.serverUrls` (OPENWOP_PUBLIC_URL + path); unset: the path. */
  url?: string;
  /** How long a `tools/call` waits for its run to finish or suspend before answering with its state. */
  callTimeoutMs: number;
  /** How long a `tools/call` answered with a task waits for its run's first stop (an interrupt, or the end) before answering. */
  taskHoldMs: number;
  /** How long a minted MRTR `requestState` is accepted. */
  requestStateTtlSeconds: number;
}

export const MCP_MOUNT_PATH = '/v1/host/openwop/mcp';
/** The current-only mount the v2 discovery record names (revision 2026-07-28 alone: v2 lists no legacy revision). */
export const MCP_MOUNT_V2_PATH = '/host/openwop/mcp';

export const MCP_MOUNT_ENV_SETTINGS: EnvSetting[] = [
  {
    name: 'OPENWOP_MCP_SERVER',
    default: 'true',
    description: 'Serve the host as an MCP server at `/v1/host/openwop/mcp` (streamable HTTP, revisions 2026-07-28 and 2025-06-18; authenticated like every route): the caller\'s governed tools and the workflows marked as exposed. `false`: no mount, none advertised.',
  },
  {
    name: 'OPENWOP_PUBLIC_URL',
    description: 'The host\'s public base URL (`https://openwop.example.com`, no query), used where the host must name itself absolutely: the MCP mount in `mcp.serverUrls` and its OAuth protected-resource metadata. Unset: discovery lists the mount as a path.',
  },
  { name: 'OPENWOP_MCP_CALL_TIMEOUT_MS', default: '60000', description: 'How long an MCP `tools/call` waits for its run to finish or stop at an interrupt; after it the answer is an error result naming the run, which goes on.' },
  {
    name: 'OPENWOP_MCP_TASK_HOLD_MS',
    default: '1000',
    description: 'How long a `tools/call` answered with an MCP task (v2 mount, Tasks declared) waits for its run to first stop (ask for input, or end) before answering; the task then carries that state (`input_required` with its `inputRequests`, or the result) instead of `working`. At most one poll interval by default, so a client learns no later than its first `tasks/get`; `0` answers as soon as the run exists.',
  },
  { name: 'OPENWOP_MCP_REQUEST_STATE_TTL_SECONDS', default: '900', description: 'How long an MCP `requestState` the mount minted for an interrupt (MRTR) is accepted on the retry.' },
];

function str(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const v = env[name];
  return v === undefined || v.trim() === '' ? undefined : v.trim();
}

function whole(env: NodeJS.ProcessEnv, name: string, dflt: number, min: number, max: number): number {
  const raw = str(env, name);
  if (raw === undefined) return dflt;
  if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) throw new McpMountSettingError(`${name} must be a whole number from ${min} to ${max}, got "${raw}"`);
  return Number(raw);
}

export function loadMcpMountConfig(env: NodeJS.ProcessEnv): McpMountConfig {
  const raw = str(env, 'OPENWOP_MCP_SERVER');
  if (raw !== undefined && !/^(true|false|1|0|yes|no|on|off)$/i.test(raw)) throw new McpMountSettingError(`OPENWOP_MCP_SERVER must be true or false, got "${raw}"`);
  const enabled = raw === undefined ? true : /^(true|1|yes|on)$/i.test(raw);
  const publicUrl = str(env, 'OPENWOP_PUBLIC_URL');
  let url: string | undefined;
  if (publicUrl !== undefined) {
    let parsed: URL;
    try {
      parsed = new URL(publicUrl);
    } catch {
      throw new McpMountSettingError(`OPENWOP_PUBLIC_URL must be an absolute http(s) URL, got "${publicUrl}"`);
    }
    if ((parsed.protocol !== 'https:' && parsed.protocol !== 'http:') || parsed.search || parsed.hash || parsed.username || parsed.password) {
      throw new McpMountSettingError(`OPENWOP_PUBLIC_URL must be an absolute http(s) URL without credentials, query or fragment, got "${publicUrl}"`);
    }
    url = `${parsed.origin}${parsed.pathname.replace(/\/+$/, '')}${MCP_MOUNT_PATH}`;
  }
  return {
    enabled,
    path: MCP_MOUNT_PATH,
    ...(url ? { url } : {}),
    callTimeoutMs: whole(env, 'OPENWOP_MCP_CALL_TIMEOUT_MS', 60_000, 100, 3_600_000),
    taskHoldMs: whole(env, 'OPENWOP_MCP_TASK_HOLD_MS', 1000, 0, 60_000),
    requestStateTtlSeconds: whole(env, 'OPENWOP_MCP_REQUEST_STATE_TTL_SECONDS', 900, 10, 86_400),
  };
}
