import type { WebhookSettings } from '../../platform/config/webhook-settings';

/** The delay before attempt `attempt + 1` after `attempt` failed: base·2^(attempt-1), capped. */
export function retryDelayMs(s: Pick<WebhookSettings, 'retryBaseMs' | 'retryMaxMs'>, attempt: number): number {
  return Math.min(s.retryMaxMs, s.retryBaseMs * 2 ** Math.max(0, attempt - 1));
}
