import { Injectable } from '@nestjs/common';
import { NodeExecutionContext, NodeExecutionError, NodeExecutionResult, NodeExecutor, NodeExecutorProvider } from '@openwop-host/plugin-sdk';

const MAX_DELAY_MS = 24 * 3600 * 1000;
const TEMPLATE = /\{\{.*\}\}/;

function wholeMs(v: unknown): boolean {
  return Number.isInteger(v) && (v as number) >= 0 && (v as number) <= MAX_DELAY_MS;
}

/**
 * `core.delay {ms}` (or `{seconds}`): waits, and stops at once when the run is cancelled, times out
 * or loses its lease. `ms` wins over `seconds`; either may be a `{{...}}` template, and `defaultMs`
 * is the wait when the templated ones resolve to nothing (an input the run was not given).
 */
@Injectable()
@NodeExecutor({ typeId: 'core.delay', replayPolicy: 'deterministic' })
export class CoreDelayExecutor implements NodeExecutorProvider {
  validateConfig(config: Record<string, unknown>): string[] {
    const ok = (v: unknown, scale: number) => (typeof v === 'string' && TEMPLATE.test(v)) || (Number.isInteger(v) && (v as number) >= 0 && (v as number) * scale <= MAX_DELAY_MS);
    const problems: string[] = [];
    if (config.ms === undefined && config.seconds === undefined) problems.push(`core.delay needs config.ms, an integer from 0 to ${MAX_DELAY_MS} (or config.seconds)`);
    if (config.ms !== undefined && !ok(config.ms, 1)) problems.push(`core.delay needs config.ms, an integer from 0 to ${MAX_DELAY_MS}`);
    if (config.seconds !== undefined && !ok(config.seconds, 1000)) problems.push(`core.delay config.seconds must be an integer from 0 to ${MAX_DELAY_MS / 1000}`);
    if (config.defaultMs !== undefined && !wholeMs(config.defaultMs)) problems.push(`core.delay config.defaultMs must be an integer from 0 to ${MAX_DELAY_MS}`);
    return problems;
  }

  async execute(ctx: NodeExecutionContext): Promise<NodeExecutionResult> {
    const { ms: rawMs, seconds, defaultMs } = ctx.config;
    const ms = rawMs !== undefined && rawMs !== null ? rawMs : seconds !== undefined && seconds !== null ? (Number.isInteger(seconds) ? (seconds as number) * 1000 : seconds) : defaultMs;
    if (!wholeMs(ms)) throw new NodeExecutionError('invalid_config', 'config.ms must be a whole number of milliseconds (config.seconds of seconds)');
    await new Promise<void>((resolve, reject) => {
      if (ctx.signal.aborted) return reject(new NodeExecutionError('aborted', 'the node was aborted'));
      const timer = setTimeout(() => {
        ctx.signal.removeEventListener('abort', onAbort);
        resolve();
      }, ms as number);
      const onAbort = () => {
        clearTimeout(timer);
        reject(new NodeExecutionError('aborted', 'the node was aborted'));
      };
      ctx.signal.addEventListener('abort', onAbort, { once: true });
    });
    return { outputs: { delayedMs: ms } };
  }
}
