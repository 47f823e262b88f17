import type { operations } from '../../generated/openapi';
import { call, HostClientOptions } from './host-client';

/**
 * `openwop-host mcp servers|pins|approve`: a client of a running host's HTTP API (`/v1/mcp/...`,
 * `tools:manage`, a tenant-level API key). Loads nothing of the host.
 */

/** A tool pin and an MCP server as the host answers them (`GET /v1/mcp/tool-pins`, `GET /v1/mcp/servers`). */
type PinView = operations['listMcpToolPins']['responses'][200]['content']['application/json']['pins'][number];
type ServerView = operations['listMcpServers']['responses'][200]['content']['application/json']['servers'][number];

export async function mcpServers(o: HostClientOptions, opts: { json?: boolean }): Promise<number> {
  const { servers } = (await call(o, 'GET', '/v1/mcp/servers')) as unknown as { servers: ServerView[] };
  if (opts.json) {
    o.out.write(`${JSON.stringify(servers, null, 2)}\n`);
    return 0;
  }
  for (const s of servers) {
    const revision = s.refused ? `refused (${s.refused.reason})` : s.negotiatedVersion ? `${s.negotiatedVersion}${s.downgraded ? ` (downgraded from ${s.requestedVersion})` : ''}` : 'not contacted yet';
    o.out.write(`${s.serverId}  ${s.transport}  downgrade ${s.downgrade}  revision ${revision}  held tools ${s.heldTools}\n`);
  }
  return 0;
}

export async function mcpPins(o: HostClientOptions, opts: { state?: string; server?: string; json?: boolean }): Promise<number> {
  const q = new URLSearchParams();
  if (opts.state) q.set('state', opts.state);
  if (opts.server) q.set('serverId', opts.server);
  const { pins } = (await call(o, 'GET', `/v1/mcp/tool-pins${q.size ? `?${q}` : ''}`)) as unknown as { pins: PinView[] };
  if (opts.json) {
    o.out.write(`${JSON.stringify(pins, null, 2)}\n`);
    return 0;
  }
  if (!pins.length) o.err.write('no pinned MCP tools\n');
  for (const p of pins) {
    o.out.write(`${p.serverId}.${p.toolName}  ${p.state}  ${p.state === 'held' ? `now ${p.observedDigest} (approved ${p.approvedDigest}, changed ${p.changedAt})` : p.approvedDigest}\n`);
  }
  return 0;
}

/**
 * Approves the definition a held tool serves now. Without `--digest` the held pin's current
 * `observedDigest` is read first and approved: say what you reviewed with `--digest` to be sure
 * nothing changed in between.
 */
export async function mcpApprove(o: HostClientOptions, serverId: string, toolName: string, opts: { digest?: string; json?: boolean }): Promise<number> {
  let digest = opts.digest;
  if (!digest) {
    const { pins } = (await call(o, 'GET', `/v1/mcp/tool-pins?serverId=${encodeURIComponent(serverId)}`)) as unknown as { pins: PinView[] };
    const pin = pins.find((p) => p.toolName === toolName);
    if (!pin) {
      o.err.write(`no pinned tool ${serverId}.${toolName}\n`);
      return 1;
    }
    if (pin.state !== 'held') {
      o.err.write(`${serverId}.${toolName} is not held; nothing to approve\n`);
      return 0;
    }
    digest = pin.observedDigest;
  }
  const pin = (await call(o, 'POST', `/v1/mcp/tool-pins/${encodeURIComponent(serverId)}/${encodeURIComponent(toolName)}/approve`, { digest })) as unknown as PinView;
  o.out.write(opts.json ? `${JSON.stringify(pin, null, 2)}\n` : `${pin.serverId}.${pin.toolName} approved at ${pin.approvedDigest}\n`);
  return 0;
}
