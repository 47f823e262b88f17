import { defineExtensionPoint } from './extension-point';

/** The artifact kinds a reviewable-learning proposal may carry (RFC 0096). */
export type ProposalKind = 'agent-pack' | 'workflow-chain-pack' | 'prompt-template' | 'automation';

export const PROPOSAL_KINDS: readonly ProposalKind[] = ['agent-pack', 'workflow-chain-pack', 'prompt-template', 'automation'];

/** One tool call observed in a run's trace (from the run's `agent.toolCalled` events, in order). */
export interface ObservedToolCall {
  toolId: string;
  sequence: number;
}

/** The tool-call trace of one run of a tenant (content-free: ids only, never arguments or results). */
export interface RunToolTrace {
  runId: string;
  calls: ObservedToolCall[];
  /** ISO time of the run's first observed call. */
  startedAt: string;
}

/** What a synthesizer is given: the traces of one tenant·workspace, read by the host. */
export interface SynthesisContext {
  tenant: string;
  workspace?: string;
  traces: RunToolTrace[];
  signal: AbortSignal;
}

/**
 * A draft a synthesizer proposes. The host persists it as an inert `draft` proposal.
 * `evidenceKey` identifies the evidence the draft was derived from: the host creates at most one
 * proposal per (tenant, workspace, evidenceKey), whatever its later state, so re-running synthesis
 * over the same evidence never creates a second draft.
 */
export interface ProposalDraft {
  kind: ProposalKind;
  title?: string;
  /** Plain-language justification; must be free of secrets and PII (SR-1). */
  rationale?: string;
  artifact: Record<string, unknown>;
  sourceRunIds: string[];
  synthesizerModel?: string;
  evidenceKey: string;
}

/**
 * Proposal synthesizer extension point: reads run/tool traces and returns draft artifacts with
 * provenance. Synthesizers run only from the scheduler or an explicit synthesis trigger, never on
 * the apply path (the apply path installs the stored bytes and calls no synthesizer).
 */
export interface ProposalSynthesizerProvider {
  synthesize(ctx: SynthesisContext): Promise<ProposalDraft[]>;
}

export const ProposalSynthesizer = defineExtensionPoint<{ id: string }>('proposal-synthesizer');
