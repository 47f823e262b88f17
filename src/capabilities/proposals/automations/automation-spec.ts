import { CronExpressionParser } from 'cron-parser';
import type { ArtifactViolation } from '@openwop-host/plugin-sdk';
import { SchemaRegistry } from '../../../platform/schemas/schema-registry';

/** An automation artifact (schemas/automation.schema.json). */
export interface AutomationSpec {
  name: string;
  version?: string;
  description?: string;
  enabled?: boolean;
  schedule: { cron: string; timezone?: string } | { intervalMs: number };
  action: { type: 'start-run'; workflowId: string; inputs?: Record<string, unknown> };
}

export function validateAutomation(content: Record<string, unknown>): ArtifactViolation[] {
  const violations = SchemaRegistry.shared()
    .validate('automation', content)
    .map((v) => ({ path: v.path, message: v.message }));
  if (violations.length) return violations;
  const schedule = (content as unknown as AutomationSpec).schedule;
  if ('cron' in schedule) {
    try {
      CronExpressionParser.parse(schedule.cron, { tz: schedule.timezone ?? 'UTC', currentDate: new Date() }).next();
    } catch (e) {
      return [{ path: '/schedule/cron', message: `is not a valid cron expression (${(e as Error).message})` }];
    }
  }
  return [];
}

/**
 * The first slot strictly after `now`. A backlog of missed slots collapses into the next one, so a
 * host that was down fires once, not once per missed slot.
 */
export function nextRunAfter(schedule: AutomationSpec['schedule'], now: Date): Date {
  if ('cron' in schedule) {
    return CronExpressionParser.parse(schedule.cron, { tz: schedule.timezone ?? 'UTC', currentDate: now }).next().toDate();
  }
  return new Date(now.getTime() + schedule.intervalMs);
}
