/** The webhooks' backoff is the platform's outbound retry rule (shared with interrupt callbacks). */
export { retryDelayMs } from '../../platform/config/webhook-settings';
