import { ConfigError, HostConfig } from '../../platform/config/host-config';
import { roleOf, ROLES } from '../../platform/identity/scopes';
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
  approval: {
    requiredScope: string;
    requiredRole?: string;
    quorum: number;
    timeoutMs: number;
    sweepIntervalMs: number;
  };
  automations: { enabled: boolean; tickIntervalMs: number; batchSize: number };
}

export const PROPOSALS_SETTINGS = Symbol.for('openwop-host.proposals.settings');

type Section = {
  synthesis?: Partial<ProposalsSettings['synthesis']>;
  approval?: Partial<ProposalsSettings['approval']>;
  automations?: Partial<ProposalsSettings['automations']>;
};

/** Reads the `proposals` section of OPENWOP_CONFIG (shape checked by host-config.schema.json) plus the activation env. */
export function proposalsSettings(config: HostConfig): ProposalsSettings {
  const section = (config.file.proposals ?? {}) as Section;
  const requiredRole = section.approval?.requiredRole;
  if (requiredRole !== undefined && !roleOf(requiredRole)) {
    throw new ConfigError(`proposals.approval.requiredRole: unknown role "${requiredRole}" (known: ${Object.keys(ROLES).join(', ')})`);
  }
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
    approval: {
      requiredScope: section.approval?.requiredScope ?? 'approvals:respond',
      requiredRole,
      quorum: section.approval?.quorum ?? 1,
      timeoutMs: section.approval?.timeoutMs ?? 7 * 24 * 3_600_000,
      sweepIntervalMs: section.approval?.sweepIntervalMs ?? 30_000,
    },
    automations: {
      enabled: section.automations?.enabled ?? true,
      tickIntervalMs: section.automations?.tickIntervalMs ?? 1_000,
      batchSize: section.automations?.batchSize ?? 50,
    },
  };
}
