import { Injectable } from '@nestjs/common';
import { NodeExecutionContext, NodeExecutionError, NodeExecutionResult, NodeExecutor, NodeExecutorProvider, SafeFetchInit } from '@openwop-host/plugin-sdk';

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'];

/**
 * `core.http.request`: one outbound HTTP call through the node's `ctx.http.safeFetch` (RFC 0076 §B): the host's SSRF
 * guard, limits and audit pair (node-http.ts). Config `{url, method?, headers?, body?}`; outputs `{status, headers,
 * body}` (the body as text). A call the guard refuses fails the node with `safe_fetch_<refusal>`.
 */
@Injectable()
@NodeExecutor({ typeId: 'core.http.request', replayPolicy: 'non-deterministic' })
export class CoreHttpRequestExecutor implements NodeExecutorProvider {
  validateConfig(config: Record<string, unknown>): string[] {
    const out: string[] = [];
    if (typeof config.url !== 'string' || !config.url) out.push('config.url must be a non-empty string');
    if (config.method !== undefined && (typeof config.method !== 'string' || !METHODS.includes(config.method.toUpperCase()))) out.push(`config.method must be one of ${METHODS.join(', ')}`);
    if (config.headers !== undefined && (!config.headers || typeof config.headers !== 'object' || Array.isArray(config.headers) || Object.values(config.headers).some((v) => typeof v !== 'string'))) {
      out.push('config.headers must be an object of strings');
    }
    if (config.body !== undefined && typeof config.body !== 'string') out.push('config.body must be a string');
    return out;
  }

  async execute(ctx: NodeExecutionContext): Promise<NodeExecutionResult> {
    const problems = this.validateConfig(ctx.config);
    if (problems.length) throw new NodeExecutionError('invalid_node_config', problems.join('; '));
    if (!ctx.http) throw new NodeExecutionError('http_unavailable', 'This host gives the node no HTTP client.');
    const c = ctx.config;
    const init: SafeFetchInit = {
      method: typeof c.method === 'string' ? c.method.toUpperCase() : 'GET',
      ...(c.headers ? { headers: c.headers as Record<string, string> } : {}),
      ...(typeof c.body === 'string' ? { body: c.body } : {}),
    };
    // A refusal throws SafeFetchError, whose code (safe_fetch_<refusal>) the engine records as the node's error.
    const res = await ctx.http.safeFetch(c.url as string, init);
    return { outputs: { status: res.status, headers: res.headers, body: res.body } };
  }
}
