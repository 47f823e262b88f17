import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * The signature schemes of webhook deliveries (webhooks.md §Headers, §Standard Webhooks):
 *
 * - `v1`, the OpenWOP scheme: `sha256=` + hex HMAC-SHA256 over `{timestamp}.{rawBody}`, keyed by the
 *   secret string as issued. Every delivery carries it.
 * - `standard-webhooks-1`, Standard Webhooks 1.0.0 (RFC 0201), for subscriptions that opted in:
 *   `webhook-signature` is a space-separated list of `v1,<base64 HMAC-SHA256>` entries over
 *   `{webhook-id}.{webhook-timestamp}.{rawBody}`, keyed by the DECODED bytes of a `whsec_` secret.
 */

/** The OpenWOP scheme id (`OpenWOP-Signature-Algorithm`), listed by every subscription. */
export const SIGNATURE_ALGORITHM = 'v1';
/** The Standard Webhooks companion scheme a major-2 subscription may opt into. */
export const STANDARD_WEBHOOKS = 'standard-webhooks-1';
/** What a major-2 registration may list in `signatureAlgorithms`. */
export const SIGNATURE_ALGORITHMS = [SIGNATURE_ALGORITHM, STANDARD_WEBHOOKS] as const;

export const WHSEC_PREFIX = 'whsec_';
/** The `webhook-id` grammar (RFC 0201 §C.10: no `.`, which the signed bytes use as a separator). */
export const MESSAGE_ID = /^[A-Za-z0-9_-]{16,128}$/;
/** How far a receiver accepts a timestamp from its clock (webhooks.md §Verification). */
export const TOLERANCE_SECONDS = 300;

/** The v1 signature: `sha256=` + hex HMAC-SHA256 over `{timestamp}.{rawBody}` (webhooks.md §Headers). */
export function signV1(secret: string, timestamp: number, rawBody: string): string {
  return `sha256=${createHmac('sha256', secret).update(`${timestamp}.${rawBody}`).digest('hex')}`;
}

/** The HMAC key of a `whsec_` secret (its base64 body decoded), or undefined unless it is that form with 24-64 bytes. */
export function whsecKey(secret: string): Buffer | undefined {
  if (!secret.startsWith(WHSEC_PREFIX)) return undefined;
  const body = secret.slice(WHSEC_PREFIX.length);
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(body) || body.length % 4 !== 0) return undefined;
  const key = Buffer.from(body, 'base64');
  return key.length >= 24 && key.length <= 64 ? key : undefined;
}

/** A fresh `whsec_` secret of 32 random bytes (what a major-2 registration without a secret is given). */
export function mintWhsec(): string {
  return `${WHSEC_PREFIX}${randomBytes(32).toString('base64')}`;
}

/** One `webhook-signature` entry, `v1,<base64>`, over `{id}.{timestamp}.{rawBody}` with the decoded secret. */
export function signStandard(key: Buffer, id: string, timestamp: number, rawBody: string): string {
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${rawBody}`).digest('base64')}`;
}

/**
 * The Standard Webhooks headers of one request: `webhook-signature` holds one entry per key, in the
 * order given (the current secret first, then a previous one still in its rotation overlap).
 */
export function standardHeaders(keys: Buffer[], id: string, timestamp: number, rawBody: string): Record<string, string> {
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': keys.map((k) => signStandard(k, id, timestamp, rawBody)).join(' '),
  };
}

/**
 * The `webhook-id` of a delivery: derived from the outbox row, one per (subscription, run event), so
 * every attempt of one delivery carries the same id (also after a restart), distinct deliveries
 * carry distinct ids, and it is never the subscription id.
 */
export function messageId(deliveryId: string): string {
  return `msg_${deliveryId.replace(/-/g, '')}`;
}

/** A fresh verification challenge: 24 random bytes, base64url (32 characters, 192 bits). */
export function mintChallenge(): string {
  return randomBytes(24).toString('base64url');
}

export type V1Verdict = { accepted: true } | { accepted: false; reason: string };

function header(headers: Record<string, unknown>, name: string): string | undefined {
  for (const [k, v] of Object.entries(headers)) if (k.toLowerCase() === name) return typeof v === 'string' ? v : Array.isArray(v) ? v.join(', ') : undefined;
  return undefined;
}

/**
 * Verifies a delivery signed with scheme `v1` the way a subscriber must (webhooks.md §Verification;
 * §Dual emission: a delivery carrying only the `X-openwop-*` family is accepted as well as one with
 * the `OpenWOP-*` family): a known algorithm, a timestamp within ±5 minutes, and the HMAC over the
 * exact bytes compared in constant time.
 */
export function verifyV1(secret: string, headers: Record<string, unknown>, rawBody: string, nowSeconds = Math.floor(Date.now() / 1000)): V1Verdict {
  const read = (n: string) => header(headers, `openwop-${n}`) ?? header(headers, `x-openwop-${n}`);
  const algorithm = read('signature-algorithm');
  if (algorithm !== undefined && algorithm !== SIGNATURE_ALGORITHM) return { accepted: false, reason: 'unknown_signature_algorithm' };
  const signature = read('signature');
  const ts = read('timestamp');
  if (signature === undefined || ts === undefined) return { accepted: false, reason: 'missing_headers' };
  if (!/^[0-9]{1,12}$/.test(ts)) return { accepted: false, reason: 'malformed_timestamp' };
  const timestamp = Number(ts);
  if (Math.abs(nowSeconds - timestamp) > TOLERANCE_SECONDS) return { accepted: false, reason: 'timestamp_out_of_tolerance' };
  const m = /^sha256=([0-9a-f]{64})$/i.exec(signature.trim());
  if (!m) return { accepted: false, reason: 'malformed_signature' };
  const given = Buffer.from(m[1], 'hex');
  const expected = Buffer.from(signV1(secret, timestamp, rawBody).slice('sha256='.length), 'hex');
  return timingSafeEqual(given, expected) ? { accepted: true } : { accepted: false, reason: 'signature_mismatch' };
}
