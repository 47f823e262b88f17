import * as fs from 'node:fs';
import * as path from 'node:path';
import { ValidationError } from '../../platform/errors/domain-error';
import { SCHEMAS_ROOT } from '../../platform/schemas/schema-registry';
import { guardedPost, GuardedPostOptions } from '../../platform/http/guarded-post';
import { mintChallenge, SIGNATURE_ALGORITHM, SIGNATURE_ALGORITHMS, STANDARD_WEBHOOKS, standardHeaders, whsecKey } from './webhook-signing';
import { WebhookEndpointUnverifiedError } from './webhooks.errors';

/**
 * The major-2 contract of webhooks (webhooks.md §Surfaces, §Delivery, §Standard Webhooks;
 * docs/webhooks.md "Major 2"): what a major-2 registration may ask for, the endpoint verification of a
 * Standard Webhooks opt-in, and the rendering of ids and deliveries for a major-2 subscriber.
 */

/** The deadline of an endpoint verification (webhooks.md §Standard Webhooks: a 2xx echo within 10 s). */
export const VERIFICATION_TIMEOUT_MS = 10_000;
/** How much of the verification answer is read (its JSON `challenge` is short). */
const VERIFICATION_MAX_BYTES = 4096;

/** A subscription id minted under major 2: an opaque segment of the tenant-bound grammar (no `_`, which v1's `wh_` ids use). */
export const V2_WEBHOOK_ID = /^wh-[0-9a-f]{24}$/;

/** `<tenant>/<id>`: the tenant-bound form of a webhook, delivery or run id at major 2 (identity.md §5). */
export function bound(tenant: string, id: string): string {
  return id.includes('/') ? id : `${tenant}/${id}`;
}

/**
 * The opt-in of a major-2 registration (webhooks.md §Standard Webhooks): `signatureAlgorithms`, when
 * sent, lists `v1`, each value once, only schemes the host advertises; listing
 * `standard-webhooks-1` needs a `whsec_` secret of 24-64 bytes. Returns the applied list.
 */
export function appliedAlgorithms(requested: string[] | undefined, secret: string | undefined): string[] {
  if (requested === undefined) return [SIGNATURE_ALGORITHM];
  if (new Set(requested).size !== requested.length) throw new ValidationError('signatureAlgorithms must not repeat a value', { field: 'signatureAlgorithms' });
  const unknown = requested.filter((a) => !(SIGNATURE_ALGORITHMS as readonly string[]).includes(a));
  if (unknown.length) throw new ValidationError(`signatureAlgorithms lists a scheme this host does not offer: ${unknown.join(', ')}`, { field: 'signatureAlgorithms', offered: [...SIGNATURE_ALGORITHMS] });
  if (!requested.includes(SIGNATURE_ALGORITHM)) throw new ValidationError('signatureAlgorithms must list v1', { field: 'signatureAlgorithms' });
  if (requested.includes(STANDARD_WEBHOOKS)) {
    if (secret === undefined) throw new ValidationError('a standard-webhooks-1 opt-in needs a secret', { field: 'secret' });
    if (!whsecKey(secret)) throw new ValidationError('secret must be whsec_ followed by the base64 of 24 to 64 bytes', { field: 'secret' });
  }
  return SIGNATURE_ALGORITHMS.filter((a) => requested.includes(a));
}

/** v2 event type → the stored (v1-vocabulary) types it renders (spec/v2/event-codemap.json, read backwards). */
const STORED_TYPES: ReadonlyMap<string, string[]> = (() => {
  const rows = (JSON.parse(fs.readFileSync(path.join(SCHEMAS_ROOT, 'openwop', 'v2', 'event-codemap.json'), 'utf8')) as { rows: Array<{ v1: string; v2: string }> }).rows;
  const out = new Map<string, string[]>();
  for (const r of rows) out.set(r.v2, [...(out.get(r.v2) ?? []), r.v1]);
  return out;
})();

/**
 * The event filter of a major-2 registration in the types the event log stores (v1 vocabulary; the
 * outbox matches them as appended): `agent.tool-called` is stored as `agent.toolCalled`. A type the
 * codemap does not name (a vendor type) is stored as given.
 */
export function storedEventTypes(v2Types: readonly string[]): string[] {
  return [...new Set(v2Types.flatMap((t) => STORED_TYPES.get(t) ?? [t]))];
}

/** Whether a subscription opted into Standard Webhooks. */
export function optedIn(algorithms: string[] | null | undefined): boolean {
  return !!algorithms?.includes(STANDARD_WEBHOOKS);
}

/**
 * The endpoint verification of a Standard Webhooks opt-in (RFC 0201 §D): one POST of
 * `{type: "openwop.webhook.verification", challenge}` signed with the Standard Webhooks headers under
 * the supplied secret, through the egress guard (re-validated, pinned, no redirect followed), never
 * retried; the endpoint consents only with a 2xx within 10 s whose JSON `challenge` is the one sent.
 * Anything else is `400 webhook_endpoint_unverified`.
 */
export async function verifyEndpoint(url: string, secret: string, userAgent: string, opts: Omit<GuardedPostOptions, 'timeoutMs' | 'maxResponseBytes'>): Promise<void> {
  const key = whsecKey(secret);
  if (!key) throw new ValidationError('secret must be whsec_ followed by the base64 of 24 to 64 bytes', { field: 'secret' });
  const challenge = mintChallenge();
  const body = JSON.stringify({ type: 'openwop.webhook.verification', challenge });
  const timestamp = Math.floor(Date.now() / 1000);
  const headers = { 'content-type': 'application/json', 'user-agent': userAgent, ...standardHeaders([key], `msg_verify${mintChallenge().replace(/[^A-Za-z0-9]/g, '')}`, timestamp, body) };
  const out = await guardedPost(url, headers, body, { ...opts, timeoutMs: VERIFICATION_TIMEOUT_MS, maxResponseBytes: VERIFICATION_MAX_BYTES });
  if (!out.ok) throw new WebhookEndpointUnverifiedError(out.error);
  let echoed: unknown;
  try {
    echoed = (JSON.parse(out.body ?? '') as { challenge?: unknown } | null)?.challenge;
  } catch {
    echoed = undefined;
  }
  if (echoed !== challenge) throw new WebhookEndpointUnverifiedError('the endpoint did not echo the challenge');
}

/**
 * The body of a major-2 delivery (webhooks.md §Delivery): `{ runId, workspaceId?, event }` with `event`
 * the run event exactly as a major-2 reader of the run gets it (`toV2Event`: v2 type, sequence from 0,
 * payload projected, `run.started.owner` with its subject, ids tenant-bound), `workspaceId` exactly
 * when the run has a workspace (never the tenant id).
 */
export function v2DeliveryBody(event: Record<string, unknown>, workspace: string | undefined): string {
  return JSON.stringify({ runId: event.runId, ...(workspace ? { workspaceId: workspace } : {}), event });
}
