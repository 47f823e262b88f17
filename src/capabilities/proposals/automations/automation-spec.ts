import type { ArtifactViolation } from '@openwop-host/plugin-sdk';
import { SchemaRegistry } from '../../../platform/schemas/schema-registry';

/** cron-parser, loaded with the first cron schedule read (most hosts have none). */
const cron = () => (require('cron-parser') as typeof import('cron-parser')).CronExpressionParser;

/** An automation artifact (schemas/automation.schema.json). */
export interface AutomationSpec {
  name: string;
  version?: string;
  description?: string;
  enabled?: boolean;
  schedule: { cron: string; timezone?: string } | { intervalMs: number };
  action: { type: 'start-run'; workflowId: string; inputs?: Record<string, unknown> };
}

/**
 * How far ahead a schedule's next slot may lie (RFC 0052 `maxFutureHorizon`, advertised as
 * `scheduling.maxFutureHorizon`): a cron whose next slot is further away (`0 0 30 2 *`, a date that
 * never comes) is refused at install instead of being kept and never firing.
 */
export const MAX_FUTURE_HORIZON = 'P5Y';
/** Five years (of 366 days): a leap-day schedule (`0 0 29 2 *`) waits up to four. */
const HORIZON_MS = 5 * 366 * 24 * 3600 * 1000;

export function validateAutomation(content: Record<string, unknown>): ArtifactViolation[] {
  const violations = SchemaRegistry.shared()
    .validate('automation', content)
    .map((v) => ({ path: v.path, message: v.message }));
  if (violations.length) return violations;
  const schedule = (content as unknown as AutomationSpec).schedule;
  if ('cron' in schedule) {
    let next: Date;
    const now = new Date();
    try {
      next = cron().parse(schedule.cron, { tz: schedule.timezone ?? 'UTC', currentDate: now }).next().toDate();
    } catch (e) {
      // cron-parser gives up on an expression with no slot in the years it searches: past the horizon too.
      if (/no valid|invalid explicit day|limit/i.test((e as Error).message)) return [{ path: '/schedule/cron', message: `schedule_horizon_exceeded: the expression has no slot within ${MAX_FUTURE_HORIZON}` }];
      return [{ path: '/schedule/cron', message: `is not a valid cron expression (${(e as Error).message})` }];
    }
    if (next.getTime() - now.getTime() > HORIZON_MS) return [{ path: '/schedule/cron', message: `schedule_horizon_exceeded: its next slot (${next.toISOString()}) is beyond ${MAX_FUTURE_HORIZON}` }];
  }
  return [];
}

/**
 * The first slot strictly after `now`. A backlog of missed slots collapses into the next one, so a
 * host that was down fires once, not once per missed slot.
 */
export function nextRunAfter(schedule: AutomationSpec['schedule'], now: Date): Date {
  if ('cron' in schedule) {
    return cron().parse(schedule.cron, { tz: schedule.timezone ?? 'UTC', currentDate: now }).next().toDate();
  }
  return new Date(now.getTime() + schedule.intervalMs);
}
