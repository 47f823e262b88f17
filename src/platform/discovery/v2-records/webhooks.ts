import type { V2FamilyRecord } from './types';

/** The facets of the v2 `webhooks` record that come from the host's webhook settings (facets/webhooks.schema.json). */
export interface WebhooksV2Facets {
  retryPolicy: { maxAttempts: number; backoff: 'exponential' };
  deadLetter: { retentionDays: number; maxPageSize: number };
  secretRotation: { overlapSeconds: number };
}

let facets: WebhooksV2Facets | undefined;

/** Called by the webhooks capability when it starts: the settings its record advertises. */
export function provideWebhooksV2Facets(f: WebhooksV2Facets): void {
  facets = f;
}

/**
 * The v2 `webhooks` record (webhooks.md, facets/webhooks.schema.json), present while the v1 document
 * advertises webhooks (their secrets need the credential store) and the capability is mounted:
 * both signature schemes (`standard-webhooks-1` per subscription, by opt-in), the retry policy
 * deliveries follow, the delivery dead-letter read (`GET /webhooks/{webhookId}/dead-letters`) and
 * secret rotation (`POST /webhooks/{webhookId}/rotate-secret`). No `durable` flag: durable delivery
 * is the contract.
 */
export const WEBHOOKS_RECORD: V2FamilyRecord = {
  family: 'webhooks',
  record: (v1) => {
    const w = v1.webhooks as { supported?: boolean } | undefined;
    if (!w?.supported || !facets) return undefined;
    return {
      status: 'experimental',
      since: '2.0',
      until: '2027-06-30',
      witness: 'witnessable-gated',
      signatureAlgorithms: ['v1', 'standard-webhooks-1'],
      retryPolicy: { ...facets.retryPolicy },
      deadLetter: { ...facets.deadLetter },
      secretRotation: { ...facets.secretRotation },
    };
  },
};
