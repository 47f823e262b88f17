import type { HostConfig } from '../../platform/config/host-config';
import type { ProposalKind } from '@openwop-host/plugin-sdk';

/** Proposal kind → the pack-registry kind whose installer installs it. An agent pack is a node-pack manifest (RFC 0003). */
export const REGISTRY_KIND: Record<ProposalKind, string> = {
  'agent-pack': 'node-pack',
  'workflow-chain-pack': 'workflow-chain-pack',
  'prompt-template': 'prompt-template',
  automation: 'automation',
};

/** The scope that activates a proposal in either activation mode ("installing is a pack-publish-class mutation"). */
export const ACTIVATION_SCOPE = 'packs:publish';

export interface ProposalsSettings {
  activation: 'direct-rbac' | 'approval-gate';
  synthesis: {
    enabled: boolean;
    intervalMs: number;
    /** A tool-call sequence must be seen in at least this many runs. */
    minRuns: number;
    /** Sequences shorter than this are not worth a chain. */
    minSequenceLength: number;
    lookbackHours: number;
    /** Upper bound of trace events read per tenant in one synthesis pass. */
    maxEvents: number;
  };
  automations: { enabled: boolean; tickIntervalMs: number; batchSize: number };
}

export const PROPOSALS_SETTINGS = Symbol.for('openwop-host.proposals.settings');

type Section = {
  synthesis?: Partial<ProposalsSettings['synthesis']>;
  automations?: Partial<ProposalsSettings['automations']>;
};

/**
 * Reads the `proposals` section of OPENWOP_CONFIG (shape checked by host-config.schema.json) plus the activation env.
 * Its `approval` part belongs to the approvals capability (approvals.settings.ts).
 */
export function proposalsSettings(config: HostConfig): ProposalsSettings {
  const section = (config.file.proposals ?? {}) as Section;
  return {
    activation: config.proposalsActivation,
    synthesis: {
      enabled: section.synthesis?.enabled ?? true,
      intervalMs: section.synthesis?.intervalMs ?? 15 * 60_000,
      minRuns: section.synthesis?.minRuns ?? 2,
      minSequenceLength: section.synthesis?.minSequenceLength ?? 2,
      lookbackHours: section.synthesis?.lookbackHours ?? 24 * 7,
      maxEvents: section.synthesis?.maxEvents ?? 50_000,
    },
    automations: {
      enabled: section.automations?.enabled ?? true,
      tickIntervalMs: section.automations?.tickIntervalMs ?? 1_000,
      batchSize: section.automations?.batchSize ?? 50,
    },
  };
}
