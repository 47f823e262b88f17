import { Injectable } from '@nestjs/common';
import { Advertiser, CapabilityAdvertiser } from '../../../platform/discovery/capability-advertiser';

/**
 * RFC 0064 `toolHooks.prePostEvents`: every external call a run makes (a `core.tool` call, `ctx.mcp.callTool`,
 * `ctx.http.safeFetch`) is bracketed in the run's log by `agent.toolCalled {argsHash, principal, transport}` and the
 * `agent.toolReturned {status, durationMs}` with the same `callId`, a refused call included (core-tool.executor.ts,
 * node-mcp.ts, node-http-audit.ts). Per-tool authorization and rate limits are not claimed.
 */
@Injectable()
@Advertiser()
export class ToolHooksAdvertiser implements CapabilityAdvertiser {
  advertise(): Record<string, unknown> {
    return { toolHooks: { supported: true, prePostEvents: true } };
  }
}
