import type { EnvSetting } from './env-setting';
import type { PortRange } from '../http/egress-guard';

/**
 * Webhook delivery settings (environment variables, validated at start with the rest of the host's
 * configuration; the webhooks capability reads them from HostConfig.webhooks).
 */
export interface WebhookSettings {
  /** Accept http:// and private, loopback and link-local targets (local receivers, tests). Never in production. */
  allowPrivate: boolean;
  /** The ports a target may use (its scheme's default port included), at registration and delivery; the relaxation above does not lift it. */
  allowedPorts: PortRange[];
  /** The same relaxation for interrupt callbacks (`createRun.callbackUrl`), which every holder of `runs:create` chooses: its own setting. */
  callbackAllowPrivate: boolean;
  /** Attempts per delivery before it is marked failed (1 = no retry). */
  maxAttempts: number;
  /** Delay before the first retry; doubles per attempt up to retryMaxMs. */
  retryBaseMs: number;
  retryMaxMs: number;
  /** Per-attempt deadline (connect + response). */
  timeoutMs: number;
  /** How often an idle worker looks for due deliveries. */
  pollMs: number;
  /** Deliveries one replica sends at once. */
  concurrency: number;
  /** Finished deliveries (succeeded or failed) older than this many days are removed from the history. */
  historyDays: number;
  /** After a secret rotation (major 2, Standard Webhooks), how long the previous secret keeps signing beside the new one. */
  rotationOverlapSeconds: number;
}

export class WebhookSettingError extends Error {}

export const WEBHOOK_ENV_SETTINGS: EnvSetting[] = [
  { name: 'OPENWOP_WEBHOOK_ALLOW_PRIVATE', description: 'Webhooks: accept http:// URLs and private, loopback and link-local targets, at registration and delivery (local receivers and tests only).', default: 'false' },
  { name: 'OPENWOP_CALLBACK_ALLOW_PRIVATE', description: 'Interrupt callbacks (`callbackUrl` on POST /runs): accept http:// URLs and private, loopback and link-local targets, at create and delivery (local receivers and tests only); `OPENWOP_WEBHOOK_ALLOW_PRIVATE` does not open them, `OPENWOP_WEBHOOK_ALLOWED_PORTS` holds for them.', default: 'false' },
  { name: 'OPENWOP_WEBHOOK_ALLOWED_PORTS', description: 'Webhooks: the ports a target URL may use, at registration and delivery: comma-separated ports and ranges (`443,8443,9000-9099`) or `*` for any; a URL without a port uses 443 (https) or 80 (http).', default: '443' },
  { name: 'OPENWOP_WEBHOOK_MAX_ATTEMPTS', description: 'Webhooks: attempts per delivery before it is marked failed (1-50).', default: '6' },
  { name: 'OPENWOP_WEBHOOK_RETRY_BASE_MS', description: 'Webhooks: delay before the first retry, doubled per further attempt.', default: '2000' },
  { name: 'OPENWOP_WEBHOOK_RETRY_MAX_MS', description: 'Webhooks: the longest delay between two attempts.', default: '600000' },
  { name: 'OPENWOP_WEBHOOK_TIMEOUT_MS', description: 'Webhooks: per-attempt deadline (connect and response).', default: '5000' },
  { name: 'OPENWOP_WEBHOOK_POLL_MS', description: 'Webhooks: how often an idle delivery worker looks for due deliveries.', default: '1000' },
  { name: 'OPENWOP_WEBHOOK_CONCURRENCY', description: 'Webhooks: deliveries one replica sends at once.', default: '8' },
  { name: 'OPENWOP_WEBHOOK_HISTORY_DAYS', description: 'Webhooks: finished deliveries older than this many days are removed from the delivery history.', default: '30' },
  { name: 'OPENWOP_WEBHOOK_ROTATION_OVERLAP_SECONDS', description: 'Webhooks (major 2): after POST /webhooks/{id}/rotate-secret, how long the previous secret keeps signing beside the new one (60-604800).', default: '3600' },
];

function int(env: NodeJS.ProcessEnv, name: string, def: number, min: number, max: number): number {
  const raw = env[name]?.trim();
  if (raw === undefined || raw === '') return def;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) throw new WebhookSettingError(`${name} must be an integer from ${min} to ${max}, got "${raw}"`);
  return n;
}

/** `443,8443,9000-9099` or `*` (every port). */
function ports(env: NodeJS.ProcessEnv): PortRange[] {
  const raw = env.OPENWOP_WEBHOOK_ALLOWED_PORTS;
  if (raw === undefined || raw.trim() === '') return [[443, 443]];
  if (raw.trim() === '*') return [[1, 65535]];
  const bad = () => new WebhookSettingError(`OPENWOP_WEBHOOK_ALLOWED_PORTS must be comma-separated ports (1-65535) or ranges such as 9000-9099, or *, got "${raw}"`);
  return raw.split(',').map((item) => {
    const m = /^\s*(\d{1,5})(?:\s*-\s*(\d{1,5}))?\s*$/.exec(item);
    if (!m) throw bad();
    const lo = Number(m[1]);
    const hi = m[2] === undefined ? lo : Number(m[2]);
    if (lo < 1 || hi > 65535 || hi < lo) throw bad();
    return [lo, hi] as const;
  });
}

export function loadWebhookSettings(env: NodeJS.ProcessEnv): WebhookSettings {
  const allow = (env.OPENWOP_WEBHOOK_ALLOW_PRIVATE ?? '').trim().toLowerCase();
  if (allow !== '' && allow !== 'true' && allow !== 'false') throw new WebhookSettingError(`OPENWOP_WEBHOOK_ALLOW_PRIVATE must be true or false, got "${allow}"`);
  const callbackAllow = (env.OPENWOP_CALLBACK_ALLOW_PRIVATE ?? '').trim().toLowerCase();
  if (callbackAllow !== '' && callbackAllow !== 'true' && callbackAllow !== 'false') throw new WebhookSettingError(`OPENWOP_CALLBACK_ALLOW_PRIVATE must be true or false, got "${callbackAllow}"`);
  const s: WebhookSettings = {
    allowPrivate: allow === 'true',
    allowedPorts: ports(env),
    callbackAllowPrivate: callbackAllow === 'true',
    maxAttempts: int(env, 'OPENWOP_WEBHOOK_MAX_ATTEMPTS', 6, 1, 50),
    retryBaseMs: int(env, 'OPENWOP_WEBHOOK_RETRY_BASE_MS', 2000, 10, 3_600_000),
    retryMaxMs: int(env, 'OPENWOP_WEBHOOK_RETRY_MAX_MS', 600_000, 10, 86_400_000),
    timeoutMs: int(env, 'OPENWOP_WEBHOOK_TIMEOUT_MS', 5000, 100, 120_000),
    pollMs: int(env, 'OPENWOP_WEBHOOK_POLL_MS', 1000, 10, 60_000),
    concurrency: int(env, 'OPENWOP_WEBHOOK_CONCURRENCY', 8, 1, 256),
    historyDays: int(env, 'OPENWOP_WEBHOOK_HISTORY_DAYS', 30, 1, 3650),
    rotationOverlapSeconds: int(env, 'OPENWOP_WEBHOOK_ROTATION_OVERLAP_SECONDS', 3600, 60, 604_800),
  };
  if (s.retryMaxMs < s.retryBaseMs) throw new WebhookSettingError('OPENWOP_WEBHOOK_RETRY_MAX_MS must not be smaller than OPENWOP_WEBHOOK_RETRY_BASE_MS');
  return s;
}

/**
 * The delay before attempt `attempt + 1` after `attempt` failed: base·2^(attempt-1), capped. Every
 * outbound retry on these settings uses it (webhook deliveries, interrupt callbacks).
 */
export function retryDelayMs(s: Pick<WebhookSettings, 'retryBaseMs' | 'retryMaxMs'>, attempt: number): number {
  return Math.min(s.retryMaxMs, s.retryBaseMs * 2 ** Math.max(0, attempt - 1));
}
