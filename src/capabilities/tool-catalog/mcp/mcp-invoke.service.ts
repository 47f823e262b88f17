import { Inject, Injectable } from '@nestjs/common';
import { DomainError, UnprocessableError } from '../../../platform/errors/domain-error';
import type { Principal } from '../../../platform/identity/principal';
import { ToolDispatchService } from '../dispatch/tool-dispatch.service';
import { TOOL_CATALOG_SETTINGS, ToolCatalogSettings, McpServerConfig } from '../tool-catalog.config';
import { callToolRound, listAllTools, McpConnection, McpRetry } from './mcp-connect';
import { McpClientService } from './mcp-client.service';
import { MCP_MRTR_MAX_ROUNDS, McpRoundsExceededError } from './mcp-revision';

export interface McpInvokeRequest {
  serverUrl: string;
  requestVersion?: string;
  tool?: string;
  arguments?: Record<string, unknown>;
  clientCapabilities?: Record<string, unknown>;
  elicitationAnswer?: Record<string, unknown>;
  scenario?: string;
  authenticated?: boolean;
}

export interface McpInvokeResult {
  negotiatedVersion: string;
  mrtr?: { inputRequiredSeen: boolean; retried: boolean; requestStateEchoed: boolean; result: unknown };
  extensionAuthority?: { scopesWidened: boolean; approvalAdvanced: boolean };
}

function sameUrl(a: string, b: string): boolean {
  try {
    return new URL(a).href === new URL(b).href;
  } catch {
    return false;
  }
}

/**
 * The client half of the MCP conformance seam: the production client (the same negotiation, headers
 * and `_meta` as the catalog and the run engine) against a server the operator configured for the
 * caller's tenant; never an arbitrary URL.
 */
@Injectable()
export class McpInvokeService {
  constructor(
    @Inject(TOOL_CATALOG_SETTINGS) private readonly settings: ToolCatalogSettings,
    private readonly mcp: McpClientService,
    private readonly dispatch: ToolDispatchService,
  ) {}

  async invoke(p: Principal, req: McpInvokeRequest): Promise<McpInvokeResult> {
    const cfg = this.mcp.servers(p.tenant).find((s): s is McpServerConfig & { transport: 'http' } => s.transport === 'http' && sameUrl(s.url, req.serverUrl));
    if (!cfg) throw new UnprocessableError('mcp_server_not_configured', 'serverUrl is not the URL of an MCP server configured for this tenant (tools.mcpServers).', { field: 'serverUrl' });
    if (req.tool) {
      // Governed dispatch, by the tier the operator classified (unclassified: write); outside a run nothing
      // can wait for an approval, so only an allowed call is made.
      const c = cfg.classification[req.tool];
      await this.dispatch.requireAllowed(p, { toolId: `mcp:${cfg.id}.${req.tool}`, safetyTier: c?.safetyTier ?? 'write', approval: c?.approval }, 'mcp-invoke');
    }
    const timeoutMs = this.settings.sourceTimeoutMs;
    const signal = AbortSignal.timeout(Math.max(timeoutMs * 4, 10_000));
    // Elicitation is declared only when the seam can answer it.
    const honoursElicitation = req.clientCapabilities?.elicitation !== undefined && req.elicitationAnswer !== undefined;
    const scopesBefore = [...p.scopes].sort().join(' ');
    let conn: McpConnection;
    try {
      conn = await this.mcp.connect(cfg, { tenant: p.tenant, workspace: p.workspace, principal: { principal: p.principal, kind: p.kind, keyId: p.keyId, scopes: p.scopes } }, {
        signal,
        timeoutMs,
        requestVersion: req.requestVersion,
        capabilities: honoursElicitation ? { elicitation: { form: {} } } : {},
        authenticated: req.authenticated,
      });
    } catch (e) {
      if (e instanceof DomainError) throw e;
      throw new DomainError('mcp_server_unreachable', 502, `The MCP server did not answer: ${(e as Error).message}`);
    }
    try {
      const out: McpInvokeResult = { negotiatedVersion: conn.revision };
      if (!req.tool) {
        await listAllTools(conn, signal, timeoutMs);
      } else {
        out.mrtr = await this.call(conn, req.tool, req.arguments ?? {}, req.elicitationAnswer, signal, timeoutMs);
      }
      if (req.scenario === 'extension-asserts-authority') {
        // Nothing a server returns reaches the caller's scopes or any approval: both stay as they were.
        out.extensionAuthority = { scopesWidened: [...p.scopes].sort().join(' ') !== scopesBefore, approvalAdvanced: false };
      }
      return out;
    } catch (e) {
      if (e instanceof DomainError) throw e;
      throw new DomainError('tool_call_failed', 502, `The MCP call failed: ${(e as Error).message}`);
    } finally {
      await conn.close();
    }
  }

  /** One logical call: the first request and every retry (each a new request id), bounded by MCP_MRTR_MAX_ROUNDS. */
  private async call(conn: McpConnection, tool: string, args: Record<string, unknown>, answer: Record<string, unknown> | undefined, signal: AbortSignal, timeoutMs: number): Promise<NonNullable<McpInvokeResult['mrtr']>> {
    let retry: McpRetry | undefined;
    let seen = false;
    let rounds = 0;
    for (;;) {
      const r = await callToolRound(conn, tool, args, retry, signal, timeoutMs);
      if (r.resultType === 'complete') return { inputRequiredSeen: seen, retried: rounds > 0, requestStateEchoed: rounds > 0, result: r.result };
      seen = true;
      if (rounds >= MCP_MRTR_MAX_ROUNDS) throw new McpRoundsExceededError(MCP_MRTR_MAX_ROUNDS);
      const inputResponses: Record<string, unknown> = {};
      for (const [key, ask] of Object.entries(r.inputRequests)) {
        if (ask.method !== 'elicitation/create' || answer === undefined) {
          throw new UnprocessableError('mcp_input_unsupported', `The MCP tool asked for ${ask.method || 'input'}, which this call cannot answer.`, { inputRequestKey: key });
        }
        inputResponses[key] = { action: 'accept', content: answer };
      }
      retry = { inputResponses, ...(r.requestState !== undefined ? { requestState: r.requestState } : {}) };
      rounds++;
    }
  }
}
