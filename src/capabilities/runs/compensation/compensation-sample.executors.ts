import { Injectable } from '@nestjs/common';
import { NodeExecutionContext, NodeExecutionError, NodeExecutionResult, NodeExecutor, NodeExecutorProvider } from '@openwop-host/plugin-sdk';

const MAX_DELAY_MS = 5_000;
const DOWNSTREAM_KEPT = 1_000;

/**
 * The sample refund's downstream system (in this process): it records every idempotency key a refund
 * of a charge presented to it, so a seam reads what the downstream received rather than what the
 * host meant to send. The most recent charges are kept.
 */
export const sampleDownstream = {
  received: new Map<string, string[]>(),
  present(chargeId: string, key: string): void {
    const keys = this.received.get(chargeId) ?? [];
    this.received.delete(chargeId);
    this.received.set(chargeId, [...keys, key]);
    if (this.received.size > DOWNSTREAM_KEPT) this.received.delete(this.received.keys().next().value as string);
  },
  /** The keys a refund of `chargeId` presented that belong to the inverse action `effectId` (its key, or `<key>.<n>`). */
  keys(chargeId: string, effectId: string): string[] {
    return (this.received.get(chargeId) ?? []).filter((k) => k === effectId || k.startsWith(`${effectId}.`));
  },
};

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => (clearTimeout(t), resolve()), { once: true });
  });
}

function effectOf(ctx: NodeExecutionContext): NonNullable<NodeExecutionContext['effect']> {
  if (!ctx.effect) throw new NodeExecutionError('effect_unavailable', 'This context offers no effect seam.');
  return ctx.effect.bind(ctx);
}

/**
 * `core.conformance.charge {amount, delayMs?}`: the compensation fixtures' forward business effect, a
 * sample charge performed through the effect seam (the activity ledger records it once), answering
 * `{chargeId, amount}`; `delayMs` holds it back so parallel charges complete in a chosen order.
 */
@Injectable()
@NodeExecutor({ typeId: 'core.conformance.charge', replayPolicy: 'non-deterministic' })
export class CoreConformanceChargeExecutor implements NodeExecutorProvider {
  validateConfig(config: Record<string, unknown>): string[] {
    const problems: string[] = [];
    if (typeof config.amount !== 'number' || !Number.isFinite(config.amount) || config.amount < 0) problems.push('core.conformance.charge needs config.amount, a number of at least 0');
    if (config.delayMs !== undefined && (!Number.isInteger(config.delayMs) || (config.delayMs as number) < 0 || (config.delayMs as number) > MAX_DELAY_MS)) problems.push(`core.conformance.charge config.delayMs must be an integer from 0 to ${MAX_DELAY_MS}`);
    return problems;
  }

  async execute(ctx: NodeExecutionContext): Promise<NodeExecutionResult> {
    const delayMs = typeof ctx.config.delayMs === 'number' ? ctx.config.delayMs : 0;
    if (delayMs) await pause(delayMs, ctx.signal);
    const amount = ctx.config.amount as number;
    const chargeId = await effectOf(ctx)('sample:charge', async (key) => `ch_${key.slice(0, 16)}`);
    return { outputs: { chargeId, amount } };
  }
}

/**
 * `core.conformance.refund {chargeId, amount, failFirstAttempts?}`: the inverse action of a sample
 * charge. Its downstream call is made through the effect seam with the key the host hands it (as an
 * inverse action, the action's identity); the sample downstream refuses the first `failFirstAttempts`
 * attempts as a transient outage, so retries of one obligation can be watched.
 */
@Injectable()
@NodeExecutor({ typeId: 'core.conformance.refund', replayPolicy: 'non-deterministic' })
export class CoreConformanceRefundExecutor implements NodeExecutorProvider {
  validateConfig(config: Record<string, unknown>): string[] {
    const problems: string[] = [];
    if (typeof config.chargeId !== 'string' || !config.chargeId) problems.push('core.conformance.refund needs config.chargeId, a string');
    if (config.failFirstAttempts !== undefined && (!Number.isInteger(config.failFirstAttempts) || (config.failFirstAttempts as number) < 0 || (config.failFirstAttempts as number) > 10)) problems.push('core.conformance.refund config.failFirstAttempts must be an integer from 0 to 10');
    return problems;
  }

  async execute(ctx: NodeExecutionContext): Promise<NodeExecutionResult> {
    const problems = this.validateConfig(ctx.config);
    if (problems.length) throw new NodeExecutionError('invalid_node_config', problems.join('; '));
    const failFirst = typeof ctx.config.failFirstAttempts === 'number' ? ctx.config.failFirstAttempts : 0;
    const refundId = await effectOf(ctx)('sample:refund', async (key) => {
      sampleDownstream.present(ctx.config.chargeId as string, key);
      if (ctx.attempt < failFirst) throw new NodeExecutionError('downstream_unavailable', `The sample downstream refused attempt ${ctx.attempt + 1} (transient).`);
      return `rf_${key.slice(0, 16)}`;
    });
    return { outputs: { refundId, chargeId: ctx.config.chargeId } };
  }
}
