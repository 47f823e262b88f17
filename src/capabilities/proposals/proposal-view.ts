import type { ProposalKind } from '@openwop-host/plugin-sdk';
import { withVerbatimText } from '../../platform/http/json-text';
import type { ProposalEntity } from './proposal.entity';

export type ProposalState = 'draft' | 'revised' | 'applied' | 'rejected' | 'archived';

export const PROPOSAL_STATES: readonly ProposalState[] = ['draft', 'revised', 'applied', 'rejected', 'archived'];

/** The wire shape (schemas/openwop/proposal.schema.json). */
export interface ProposalView {
  id: string;
  kind: ProposalKind;
  state: ProposalState;
  title?: string;
  rationale?: string;
  artifact: Record<string, unknown>;
  provenance: { sourceRunIds: string[]; synthesizerModel?: string };
  duplicateOf: string | null;
  owner: { tenant: string; workspace?: string; principal?: string };
  activation: { approvalId: string | null; installedArtifactRef: string } | null;
  createdAt: string;
  updatedAt: string;
}

export function toProposalView(p: ProposalEntity): ProposalView {
  const view: ProposalView = {
    id: p.id,
    kind: p.kind as ProposalKind,
    state: p.state as ProposalState,
    // Served as the stored text itself (VerbatimJsonInterceptor), not a re-serialization.
    artifact: withVerbatimText(JSON.parse(p.artifactBytes) as Record<string, unknown>, p.artifactBytes),
    provenance: { sourceRunIds: p.sourceRunIds, ...(p.synthesizerModel ? { synthesizerModel: p.synthesizerModel } : {}) },
    duplicateOf: p.duplicateOf,
    owner: {
      tenant: p.tenant,
      ...(p.workspaceKey ? { workspace: p.workspaceKey } : {}),
      ...(p.principal ? { principal: p.principal } : {}),
    },
    // Populated only once applied (a pending approval gate is not an activation).
    activation: p.state === 'applied' && p.installedArtifactRef ? { approvalId: p.approvalId, installedArtifactRef: p.installedArtifactRef } : null,
    createdAt: p.createdAt.toISOString(),
    updatedAt: p.updatedAt.toISOString(),
  };
  if (p.title !== null) view.title = p.title;
  if (p.rationale !== null) view.rationale = p.rationale;
  return view;
}
