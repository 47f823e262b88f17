import { Injectable } from '@nestjs/common';
import { NodeExecutionContext, NodeExecutionResult, NodeExecutor, NodeExecutorProvider } from '@openwop-host/plugin-sdk';

/**
 * `core.external-event {eventType, correlation?, title?}`: suspends the run in `waiting-external` on
 * an `external-event` interrupt, resolved through its signed token (`POST /v1/interrupts/{token}`,
 * the token is in the run snapshot's `interrupt`) or the run-scoped route. The resolving value must
 * be an object carrying every `correlation` field with the same value (422 `correlation_mismatch`
 * otherwise, and the run keeps waiting); the node outputs it as `event`.
 */
@Injectable()
@NodeExecutor({ typeId: 'core.external-event', replayPolicy: 'idempotent' })
export class CoreExternalEventExecutor implements NodeExecutorProvider {
  validateConfig(config: Record<string, unknown>): string[] {
    const problems: string[] = [];
    if (typeof config.eventType !== 'string' || !config.eventType || config.eventType.length > 256) problems.push('core.external-event needs config.eventType, a string of 1 to 256 characters');
    const c = config.correlation;
    if (c !== undefined && (typeof c !== 'object' || c === null || Array.isArray(c))) problems.push('core.external-event config.correlation must be an object');
    return problems;
  }

  async execute(ctx: NodeExecutionContext): Promise<NodeExecutionResult> {
    const correlation = (ctx.config.correlation ?? {}) as Record<string, unknown>;
    const eventType = String(ctx.config.eventType);
    const title = typeof ctx.config.title === 'string' && ctx.config.title ? ctx.config.title : `Waiting for ${eventType}`;
    const resumeSchema = {
      type: 'object',
      required: Object.keys(correlation),
      properties: Object.fromEntries(Object.entries(correlation).map(([k, v]) => [k, { type: jsonType(v) }])),
    };
    const value = await ctx.interrupt({ kind: 'external-event', title, resumeSchema, data: { eventType, correlation } });
    return { outputs: { event: value } };
  }
}

function jsonType(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return 'number';
  return typeof v;
}
