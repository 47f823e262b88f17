import { Injectable } from '@nestjs/common';
import { NodeExecutionContext, NodeExecutionError, NodeExecutionResult, NodeExecutor, NodeExecutorProvider } from '@openwop-host/plugin-sdk';

const MAX_DELAY_MS = 24 * 3600 * 1000;

/** `core.delay {ms}`: waits, and stops at once when the run is cancelled, times out or loses its lease. */
@Injectable()
@NodeExecutor({ typeId: 'core.delay', replayPolicy: 'deterministic' })
export class CoreDelayExecutor implements NodeExecutorProvider {
  validateConfig(config: Record<string, unknown>): string[] {
    const ms = config.ms;
    if (typeof ms === 'string' && /\{\{.*\}\}/.test(ms)) return [];
    return Number.isInteger(ms) && (ms as number) >= 0 && (ms as number) <= MAX_DELAY_MS ? [] : [`core.delay needs config.ms, an integer from 0 to ${MAX_DELAY_MS}`];
  }

  async execute(ctx: NodeExecutionContext): Promise<NodeExecutionResult> {
    const ms = ctx.config.ms;
    if (!Number.isInteger(ms) || (ms as number) < 0 || (ms as number) > MAX_DELAY_MS) throw new NodeExecutionError('invalid_config', 'config.ms must be a whole number of milliseconds');
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
