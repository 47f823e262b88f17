import type { V2FamilyRecord } from './types';

/**
 * The v2 `interrupt` record (interrupt.md, facets/interrupt.schema.json): run-scoped resolution
 * (`POST /runs/{runId}/interrupts/{nodeId}`) and the signed-token surface (`GET`/`POST
 * /interrupts/{token}`, tokens `ow2.hs256.<kid>.<payload>.<mac>`). `refKinds: ["principal"]`: an
 * approval gate's `approversList` names principals and is enforced at every resolve; group and role
 * refs are not supported (a gate naming them is refused at install). `callbackDelivery` (RFC 0196
 * §A): a run's `callbackUrl` is held to the webhooks' SSRF guard at create and at delivery, and is
 * POSTed a notification of each interrupt its run opens (interrupt-callbacks.service.ts).
 */
export const INTERRUPT_RECORD: V2FamilyRecord = {
  family: 'interrupt',
  record: () => ({
    status: 'experimental',
    since: '2.0',
    until: '2027-06-30',
    witness: 'witnessable-gated',
    tokenAlgs: ['hs256'],
    refKinds: ['principal'],
    callbackDelivery: true,
  }),
};
