import { MAX_PAGE_LIMIT } from '../../pagination/page-query';
import type { V2FamilyRecord } from './types';

/** The filters `GET /runs` takes (its query parameters beside `limit` and `cursor`). */
export const RUN_LIST_FILTERS = ['status', 'workflowId'] as const;

/**
 * The v2 `runList` record (RFC 0182, runs.md §List): `GET /runs` is the caller's tenant's runs as
 * v2 RunSnapshots, newest first, `limit` at most `maxPageSize` per page, a cursor the host did not
 * mint refused `400 validation_error`, filtered exactly by `status` and `workflowId`. The run list
 * is always served, so the record is always present.
 */
export const RUN_LIST_RECORD: V2FamilyRecord = {
  family: 'runList',
  record: () => ({
    status: 'experimental',
    since: '2.0',
    until: '2027-06-30',
    witness: 'witnessable-gated',
    maxPageSize: MAX_PAGE_LIMIT,
    filters: [...RUN_LIST_FILTERS],
  }),
};
