import * as fs from 'node:fs';
import * as path from 'node:path';
import { SCHEMAS_ROOT } from '../schemas/schema-registry';
import type { ErrorEnvelope } from './error-envelope.filter';

/**
 * The error envelope under protocol major 2 (spec v2 errors.md): the same closed
 * `{ error, message, details? }`, but every code is one of the v2 registry
 * (`schemas/openwop/v2/error-envelope.schema.json`) at its registered status, or a vendor code
 * `openwop-host.<code>` for a v1 code the registry does not know; retry timing is only in the
 * `Retry-After` header, never in `details`.
 */
const REGISTRY: Readonly<Record<string, number>> = (
  JSON.parse(fs.readFileSync(path.join(SCHEMAS_ROOT, 'openwop', 'v2', 'error-envelope.schema.json'), 'utf8')) as { 'x-openwop-http-status': Record<string, number> }
)['x-openwop-http-status'];

/** This host's vendor org for codes the v2 registry does not have (the v1 ones it still raises). */
export const VENDOR_ORG = 'openwop-host';

const VENDOR_CODE = /^(?!openwop\.)[a-z][a-z0-9]*(-[a-z0-9]+)*\.[a-z][a-z0-9_]*$/;

const RETRY_DETAILS = ['retryAfter', 'retryAfterMs', 'retryAfterSeconds'];

export function isV2RegisteredCode(code: string): boolean {
  return Object.prototype.hasOwnProperty.call(REGISTRY, code);
}

const TERMINAL_RUN_STATUSES = new Set(['completed', 'failed', 'cancelled']);

/**
 * A run's own error codes (a snapshot's `error`, `run.failed` and `node.failed`) that v2 spells
 * otherwise: a rejected (or timed-out) approval gate is `approval_rejected` (interrupt.md §Rejection,
 * RFC 0223), which v1 names `approval_denied`. Such a failure is a decision, never retried.
 */
const V2_RUN_ERROR_CODES: Readonly<Record<string, { code: string; retryable?: false }>> = {
  approval_denied: { code: 'approval_rejected', retryable: false },
};

/** A run error object (`{code, message, ...}`) as major 2 writes it. */
export function v2RunError(error: unknown): unknown {
  if (!error || typeof error !== 'object' || Array.isArray(error)) return error;
  const e = error as Record<string, unknown>;
  const mapped = typeof e.code === 'string' ? V2_RUN_ERROR_CODES[e.code] : undefined;
  return mapped ? { ...e, code: mapped.code, ...(mapped.retryable === false ? { retryable: false } : {}) } : error;
}

/**
 * v1 codes v2 spells otherwise. A run control refused by the run's state (runs.md §Pause and
 * resume) is `run_terminal` on a finished run and `run_state_conflict` (with `details.runStatus`)
 * on any other.
 */
function v2Code(error: string, details: Record<string, unknown> | undefined): string {
  if (error === 'run_not_pausable' || error === 'run_not_paused') {
    return TERMINAL_RUN_STATUSES.has(String(details?.runStatus)) ? 'run_terminal' : 'run_state_conflict';
  }
  // An unknown (or unregistered) webhook subscription is the registry's plain not_found (webhooks.md, RFC 0217).
  if (error === 'subscription_not_found') return 'not_found';
  return error;
}

/** The major-2 form of an answer the filter composed for major 1. */
export function toV2Envelope(status: number, body: ErrorEnvelope): { status: number; body: ErrorEnvelope } {
  let error = v2Code(body.error, body.details);
  if (isV2RegisteredCode(error)) {
    // A registered code travels at its registered status (v1's 501 capability_not_provided is a 422 here).
    status = REGISTRY[error];
  } else if (!VENDOR_CODE.test(error)) {
    error = `${VENDOR_ORG}.${error.replace(/[^a-z0-9_]/g, '_')}`;
  }
  const out: ErrorEnvelope = { error, message: body.message };
  if (body.details) {
    const details = Object.fromEntries(Object.entries(body.details).filter(([k]) => !RETRY_DETAILS.includes(k)));
    if (Object.keys(details).length) out.details = details;
  }
  return { status, body: out };
}
