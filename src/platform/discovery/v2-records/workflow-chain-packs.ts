import type { V2FamilyRecord } from './types';

/**
 * The v2 `workflowChainPacks` record (spec/v2 core/workflow-chain-packs.md, RFC 0013): workflow-chain
 * packs are installed (checked at install), resolved by chain id and run, present while the v1
 * document advertises `workflowChainPacks`. The v1 document's `subChains` and `deferredParameters` facets are not
 * projected into this record. The family has no operations of its own in the v2 path manifest.
 */
export const WORKFLOW_CHAIN_PACKS_RECORD: V2FamilyRecord = {
  family: 'workflowChainPacks',
  record: (v1) => {
    const w = v1.workflowChainPacks as { supported?: boolean } | undefined;
    if (!w?.supported) return undefined;
    return { status: 'experimental', since: '2.0', until: '2027-06-30', witness: 'witnessable-gated' };
  },
};
