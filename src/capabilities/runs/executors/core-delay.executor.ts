import { Injectable } from '@nestjs/common';
import { NodeExecutionContext, NodeExecutionError, NodeExecutionResult, NodeExecutor, NodeExecutorProvider } from '@openwop-host/plugin-sdk';

const MAX_DELAY_MS = 24 * 3600 * 1000;


const isTemplate = (v: unknown) => typeof v === 'string' && /\{\{.*\}\}/.test(v);
const isMs = (v: unknown) => Number.isInteger(v) && (v as number) >= 0 && (v as number) <= MAX_DELAY_MS;
const isSeconds = (v: unknown) => typeof v === 'number' && Number.isFinite(v) && v >= 0 && v * 1000 <= MAX_DELAY_MS;

/**
 * `core.delay {ms}` (or `{seconds}`; `defaultMs` when a templated one resolves to nothing): waits,
 * and stops at once when the run is cancelled, times out or loses its lease.
 */
@Injectable()
@NodeExecutor({ typeId: 'core.delay', replayPolicy: 'deterministic' })
export class CoreDelayExecutor implements NodeExecutorProvider {
  validateConfig(config: Record<string, unknown>): string[] {
    const { ms, seconds, defaultMs } = config;
    const problems: string[] = [];
    if (ms !== undefined && !isTemplate(ms) && !isMs(ms)) problems.push(`core.delay config.ms must be an integer from 0 to ${MAX_DELAY_MS}`);
    if (seconds !== undefined && !isTemplate(seconds) && !isSeconds(seconds)) problems.push(`core.delay config.seconds must be a number from 0 to ${MAX_DELAY_MS / 1000}`);
    if (defaultMs !== undefined && !isMs(defaultMs)) problems.push(`core.delay config.defaultMs must be an integer from 0 to ${MAX_DELAY_MS}`);
    if (ms === undefined && seconds === undefined) problems.push(`core.delay needs config.ms, an integer from 0 to ${MAX_DELAY_MS} (or config.seconds)`);
    return problems;
  }

  async execute(ctx: NodeExecutionContext): Promise<NodeExecutionResult> {
    const ms = resolveDelay(ctx.config);
    const until = Date.now() + ms;
    await new Promise<void>((resolve, reject) => {
      if (ctx.signal.aborted) return reject(new NodeExecutionError('aborted', 'the node was aborted'));
      let timer: NodeJS.Timeout;
      // A timer is due on the event loop's clock, cached at the start of the loop's turn, so it can fire a
      // millisecond or two before the wall clock says the delay has passed: wait out the rest, so the node's
      // measured duration is never shorter than the delay it was given.
      const arm = () => {
        const left = until - Date.now();
        if (left > 0) {
          timer = setTimeout(arm, left);
          return;
        }
        ctx.signal.removeEventListener('abort', onAbort);
        resolve();
      };
      const onAbort = () => {
        clearTimeout(timer);
        reject(new NodeExecutionError('aborted', 'the node was aborted'));
      };
      ctx.signal.addEventListener('abort', onAbort, { once: true });
      arm();
    });
    return { outputs: { delayedMs: ms } };
  }
}

/** The delay a templated config resolved to: `ms`, else `seconds`, else `defaultMs` (each only when given). */
function resolveDelay(config: Record<string, unknown>): number {
  const { ms, seconds, defaultMs } = config;
  if (ms !== undefined && ms !== null && ms !== '') {
    if (!isMs(ms)) throw new NodeExecutionError('invalid_config', `config.ms must be a whole number of milliseconds from 0 to ${MAX_DELAY_MS}`);
    return ms as number;
  }
  if (seconds !== undefined && seconds !== null && seconds !== '') {
    if (!isSeconds(seconds)) throw new NodeExecutionError('invalid_config', `config.seconds must be a number of seconds from 0 to ${MAX_DELAY_MS / 1000}`);
    return Math.round((seconds as number) * 1000);
  }
  if (isMs(defaultMs)) return defaultMs as number;
  throw new NodeExecutionError('invalid_config', 'config.ms must be a whole number of milliseconds');
}
