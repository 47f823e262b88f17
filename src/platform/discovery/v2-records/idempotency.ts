import type { V2FamilyRecord } from './types';

/**
 * The v2 `idempotency` record (RFC 0150, spec v2 idempotency.md): `Idempotency-Key` on run
 * creation and run control (the v2 key grammar at major 2), and the Layer-2 effect ledger a run's
 * side effects are keyed in, read at `GET /runs/{runId}/effects` with tenant-bound `effectId`s.
 * Served in every configuration (the ledger and the keyed operations are the run engine's), single
 * region: neither `multiRegion` nor `crossRegion` is claimed, so both facets are absent.
 */
export const IDEMPOTENCY_RECORD: V2FamilyRecord = {
  family: 'idempotency',
  record: () => ({
    status: 'experimental',
    since: '2.0',
    until: '2027-06-30',
    witness: 'witnessable-gated',
  }),
};
