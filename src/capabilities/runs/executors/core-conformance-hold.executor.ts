import { Injectable } from '@nestjs/common';
import { NodeExecutionContext, NodeExecutionError, NodeExecutionResult, NodeExecutor, NodeExecutorProvider } from '@openwop-host/plugin-sdk';

const MAX_HOLD_MS = 24 * 3600 * 1000;
const isTemplate = (v: unknown) => typeof v === 'string' && /\{\{.*\}\}/.test(v);
const isMs = (v: unknown) => Number.isInteger(v) && (v as number) >= 0 && (v as number) <= MAX_HOLD_MS;

/**
 * `core.conformance.hold {delayMs}`: the conformance-reserved pure wait (suite 2.44.4). It completes after `delayMs`
 * (none: at once) with its resolved config as its outputs, exactly, `delayMs` included; it performs nothing outside
 * the run's log, so a replay executes it again live (it is `deterministic`), and it stops at once when the run is
 * cancelled, paused immediately or loses its lease. The ordinal-loop fixture waits in it between two executions of
 * its side-effecting node.
 */
@Injectable()
@NodeExecutor({ typeId: 'core.conformance.hold', replayPolicy: 'deterministic' })
export class CoreConformanceHoldExecutor implements NodeExecutorProvider {
  validateConfig(config: Record<string, unknown>): string[] {
    const ms = config.delayMs;
    return ms === undefined || isTemplate(ms) || isMs(ms) ? [] : [`core.conformance.hold config.delayMs must be an integer from 0 to ${MAX_HOLD_MS}`];
  }

  async execute(ctx: NodeExecutionContext): Promise<NodeExecutionResult> {
    const ms = ctx.config.delayMs;
    if (ms !== undefined && ms !== null && !isMs(ms)) throw new NodeExecutionError('invalid_config', `config.delayMs must be a whole number of milliseconds from 0 to ${MAX_HOLD_MS}`);
    const until = Date.now() + ((ms as number | undefined) ?? 0);
    await new Promise<void>((resolve, reject) => {
      if (ctx.signal.aborted) return reject(new NodeExecutionError('aborted', 'the node was aborted'));
      let timer: NodeJS.Timeout;
      const onAbort = () => {
        clearTimeout(timer);
        reject(new NodeExecutionError('aborted', 'the node was aborted'));
      };
      // A timer may fire a little before the wall clock has passed `until`: wait out the rest.
      const arm = () => {
        const left = until - Date.now();
        if (left > 0) return void (timer = setTimeout(arm, left));
        ctx.signal.removeEventListener('abort', onAbort);
        resolve();
      };
      ctx.signal.addEventListener('abort', onAbort, { once: true });
      arm();
    });
    return { outputs: { ...ctx.config } };
  }
}
