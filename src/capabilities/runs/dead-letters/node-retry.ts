import { NodeExecutionContext, NodeExecutionError, NodeExecutionResult, NodeExecutorProvider } from '@openwop-host/plugin-sdk';

/**
 * A node's RFC 0009 retry policy, `config.retry {maxAttempts, backoffMs?}`, honoured around any executor: a
 * failure (`NodeExecutionError`, the node not stopped) is retried after `node.retried {nodeId, attempt, delayMs,
 * lastError}` until `maxAttempts` executions have failed; then the run is dead-lettered (RFC 0053): the node
 * appends `run.dead_lettered {runId, nodeId, reason, attempts}` and the sink records it, and the failure goes
 * on to fail the run as usual. A node without `retry` runs exactly as before (one attempt, no events added).
 */

export const MAX_ATTEMPTS = 10;
export const MAX_BACKOFF_MS = 60_000;

export interface RetryPolicy {
  maxAttempts: number;
  backoffMs: number;
}

/** The sink a retry-exhausted node is recorded in (dead-letters.service.ts). */
export interface DeadLetterSink {
  record(ctx: Pick<NodeExecutionContext, 'runId' | 'principal'>, letter: { nodeId: string; reason: string; attempts: number }): Promise<void>;
}

export function retryPolicyProblems(config: Record<string, unknown>): string[] {
  const r = config.retry;
  if (r === undefined) return [];
  if (!r || typeof r !== 'object' || Array.isArray(r)) return ['config.retry must be an object {maxAttempts, backoffMs?}'];
  const { maxAttempts, backoffMs, ...rest } = r as Record<string, unknown>;
  const problems: string[] = [];
  if (!Number.isInteger(maxAttempts) || (maxAttempts as number) < 1 || (maxAttempts as number) > MAX_ATTEMPTS) problems.push(`config.retry.maxAttempts must be an integer from 1 to ${MAX_ATTEMPTS}`);
  if (backoffMs !== undefined && (!Number.isInteger(backoffMs) || (backoffMs as number) < 0 || (backoffMs as number) > MAX_BACKOFF_MS)) problems.push(`config.retry.backoffMs must be an integer from 0 to ${MAX_BACKOFF_MS}`);
  for (const k of Object.keys(rest)) problems.push(`config.retry.${k} is not a retry policy field (maxAttempts, backoffMs)`);
  return problems;
}

export function retryPolicyOf(config: Record<string, unknown>): RetryPolicy | undefined {
  if (retryPolicyProblems(config).length || config.retry === undefined) return undefined;
  const r = config.retry as { maxAttempts: number; backoffMs?: number };
  return { maxAttempts: r.maxAttempts, backoffMs: r.backoffMs ?? 0 };
}

function pause(ms: number, signal: AbortSignal): Promise<void> {
  if (!ms) return Promise.resolve();
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => (clearTimeout(t), resolve()), { once: true });
  });
}

async function executeWithRetries(target: NodeExecutorProvider, ctx: NodeExecutionContext, sink: DeadLetterSink): Promise<NodeExecutionResult> {
  const policy = retryPolicyOf(ctx.config);
  if (!policy) return target.execute(ctx);
  for (let attempt = 1; ; attempt++) {
    try {
      return await target.execute(ctx);
    } catch (e) {
      // Only a node's own failure is retried: never a suspension, an engine fault or a stopped node.
      if (!(e instanceof NodeExecutionError) || ctx.signal.aborted) throw e;
      if (attempt >= policy.maxAttempts) {
        if (policy.maxAttempts > 1) {
          await ctx.emit('run.dead_lettered', { runId: ctx.runId, nodeId: ctx.nodeId, reason: e.code, attempts: attempt });
          await sink.record(ctx, { nodeId: ctx.nodeId, reason: e.code, attempts: attempt });
        }
        throw e;
      }
      await ctx.emit('node.retried', { nodeId: ctx.nodeId, attempt: attempt + 1, delayMs: policy.backoffMs, lastError: { code: e.code, message: e.message } });
      await pause(policy.backoffMs, ctx.signal);
      if (ctx.signal.aborted) throw e;
    }
  }
}

/** `provider` with `config.retry` honoured (its execute) and checked (its validateConfig). */
export function withRetries(provider: NodeExecutorProvider, sink: DeadLetterSink): NodeExecutorProvider {
  return new Proxy(provider, {
    get(target, prop, receiver) {
      if (prop === 'execute') return (ctx: NodeExecutionContext) => executeWithRetries(target, ctx, sink);
      if (prop === 'validateConfig') return (config: Record<string, unknown>) => [...(target.validateConfig?.call(target, config) ?? []), ...retryPolicyProblems(config)];
      // The structured check install uses (chain-pack-checks.ts StructuredConfigCheck), when the executor has one.
      const structured = (target as { configProblems?: (c: Record<string, unknown>) => Array<{ path: string; code: string; message: string }> }).configProblems;
      if (prop === 'configProblems' && typeof structured === 'function') {
        return (config: Record<string, unknown>) => [...structured.call(target, config), ...retryPolicyProblems(config).map((message) => ({ path: '/retry', code: 'invalid_node_config', message }))];
      }
      const v = Reflect.get(target, prop, receiver) as unknown;
      // Methods run on the executor itself; its class (decorator metadata) is answered as it is.
      return typeof v === 'function' && prop !== 'constructor' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}
