import { ConfigError, HostConfig } from '../../platform/config/host-config';
import { roleOf, ROLES } from '../../platform/identity/scopes';

/** Who may decide a gate, how many must, and how long it stays open. */
export interface ApprovalsSettings {
  requiredScope: string;
  requiredRole?: string;
  quorum: number;
  timeoutMs: number;
  sweepIntervalMs: number;
  /** Whether the principal that opened a gate (a run's owner, a proposal's applier) may approve it, unless the gate says otherwise. */
  allowSelfApproval: boolean;
}

export const APPROVALS_SETTINGS = Symbol.for('openwop-host.approvals.settings');

/**
 * Reads `proposals.approval` of OPENWOP_CONFIG (shape checked by host-config.schema.json). The section
 * keeps its name from when proposals were the only gated subject: operators' files stay valid.
 */
export function approvalsSettings(config: HostConfig): ApprovalsSettings {
  const section = ((config.file.proposals ?? {}) as { approval?: Partial<ApprovalsSettings> }).approval ?? {};
  const requiredRole = section.requiredRole;
  if (requiredRole !== undefined && !roleOf(requiredRole)) {
    throw new ConfigError(`proposals.approval.requiredRole: unknown role "${requiredRole}" (known: ${Object.keys(ROLES).join(', ')})`);
  }
  return {
    requiredScope: section.requiredScope ?? 'approvals:respond',
    requiredRole,
    quorum: section.quorum ?? 1,
    timeoutMs: section.timeoutMs ?? 7 * 24 * 3_600_000,
    sweepIntervalMs: section.sweepIntervalMs ?? 30_000,
    allowSelfApproval: section.allowSelfApproval ?? true,
  };
}
