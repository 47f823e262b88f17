import { HOST_NAME } from '../discovery.service';
import type { V2FamilyRecord } from './types';

/**
 * The v2 `multiAgent` record, carrying only what this host serves of the family: `getRunAncestry`
 * (`GET /runs/{runId}/ancestry`, runs.md §Diff and ancestry), gated on
 * `executionModel.crossHostCausation.ancestryEndpointSupported`. Its `hostId` is the host's
 * implementation name; every parent it names is on this host (a `core.subWorkflow` child's), so
 * no answer carries `wellKnownUrl`. No other facet is present: presence is the claim, and the
 * host runs no supervisor/handoff execution loop, so `/v1` (which gates the endpoint on that whole
 * model) does not advertise the family and does not serve the endpoint.
 */
export const MULTI_AGENT_RECORD: V2FamilyRecord = {
  family: 'multiAgent',
  record: () => ({
    status: 'experimental',
    since: '2.0',
    until: '2027-06-30',
    witness: 'witnessable-gated',
    executionModel: { crossHostCausation: { hostId: HOST_NAME, ancestryEndpointSupported: true } },
  }),
};
