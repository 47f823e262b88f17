import type { HostConfig } from '../../platform/config/host-config';
import { MCP_MOUNT_PATH } from '../../platform/config/mcp-mount-settings';
import type { RunState } from './mcp-run-projection';
import type { HeaderBag, McpRequest } from './mcp-wire';

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function first(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}

/**
 * The origin a request reached the host at, from its `Host` header (https only when a proxy said
 * `X-Forwarded-Proto: https`); undefined without a usable `Host`.
 */
export function requestOrigin(headers: HeaderBag): string | undefined {
  const host = first(headers.host);
  if (!host || !/^[A-Za-z0-9.[\]:-]{1,300}$/.test(host)) return undefined;
  const proto = first(headers['x-forwarded-proto'])?.split(',')[0]?.trim().toLowerCase() === 'https' ? 'https' : 'http';
  return `${proto}://${host}`;
}

/** Where the host's own pages are: OPENWOP_PUBLIC_URL (with its path prefix) when set, else the request's origin. */
export function hostBase(config: Pick<HostConfig, 'mcpMount'>, req: Pick<McpRequest, 'origin'>): string | undefined {
  const url = config.mcpMount.url;
  if (url && url.endsWith(MCP_MOUNT_PATH)) return url.slice(0, url.length - MCP_MOUNT_PATH.length);
  return req.origin;
}

/** Whether the request declared URL-mode elicitation (`capabilities.elicitation.url`, MCP 2025-11-25 and later). */
export function declaresUrlMode(req: McpRequest): boolean {
  const e = req.clientCapabilities.elicitation;
  return isObject(e) && isObject(e.url);
}

/**
 * The URL-mode elicitation of an interrupt MCP form mode cannot carry (a nested answer, a secret:
 * RFC 0199 §D.2(d)): the page of the host where a person answers it (the console's page of the run,
 * which resolves its open interrupt), never the answer's schema. Undefined when the host serves no
 * such page (console off, or no known origin): the caller then gets an isError result.
 */
export function urlElicitation(config: Pick<HostConfig, 'mcpMount' | 'consoleEnabled'>, req: McpRequest, state: RunState, elicitationId: string): Record<string, unknown> | undefined {
  const open = state.interrupt;
  const base = hostBase(config, req);
  if (!open || !config.consoleEnabled || !base) return undefined;
  return {
    mode: 'url',
    message: `${open.title} (answer it on the host's page; your answer does not pass through this client)`,
    url: `${base}/console/#/runs/${encodeURIComponent(state.runId)}`,
    elicitationId,
  };
}

/**
 * The URL-mode elicitation of a `credential` interrupt (RFC 0199 §D.2(a)): the interrupt's own `connectUrl`,
 * where the run's starter authorizes the provider; the URL carries no token and resolves nothing by itself.
 * Undefined when the interrupt carries no connect URL.
 */
export function credentialElicitation(state: RunState, elicitationId: string): Record<string, unknown> | undefined {
  const data = state.interrupt?.data ?? {};
  if (typeof data.connectUrl !== 'string' || !data.connectUrl) return undefined;
  return { mode: 'url', message: `${credentialNeed(state)}: authorize it on the host's page (your client never sees the credential), then retry`, url: data.connectUrl, elicitationId };
}

/** What a credential interrupt asks for, in a phrase naming the provider and scopes. */
export function credentialNeed(state: RunState): string {
  const data = state.interrupt?.data ?? {};
  const scopes = Array.isArray(data.scopes) && data.scopes.length ? ` (${data.scopes.join(' ')})` : '';
  return `The run needs an authorized ${typeof data.provider === 'string' ? data.provider : 'provider'} credential${scopes}`;
}
