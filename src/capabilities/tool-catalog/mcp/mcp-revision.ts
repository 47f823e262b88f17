import { DomainError } from '../../../platform/errors/domain-error';

/** The MCP revision the host prefers and requests first (stateless, `server/discover`, MRTR). */
export const MCP_CURRENT_REVISION = '2026-07-28';
/** The one older revision the host speaks, only through an explicit downgrade (the `initialize` handshake). */
export const MCP_LEGACY_REVISION = '2025-06-18';
/** Every revision the host's MCP client speaks, preferred first (what discovery advertises). */
export const MCP_REVISIONS: readonly string[] = [MCP_CURRENT_REVISION, MCP_LEGACY_REVISION];

/** How many `input_required` rounds one logical MCP call may take before it is refused. */
export const MCP_MRTR_MAX_ROUNDS = 4;

export type McpDowngradePolicy = 'allow' | 'forbid';

/** Why a negotiation did not reach a revision both sides speak. */
export type McpRefusalReason = 'unsupported' | 'version-downgrade-forbidden' | 'unauthenticated';

/**
 * A revision failure as it crosses the OpenWOP boundary (RFC 0153 §B): `interop_version_unsupported`,
 * never the upstream body. `requested` is what the host asked for, `supported` what it speaks.
 */
export class McpRevisionError extends DomainError {
  constructor(
    readonly requested: string,
    readonly reason: McpRefusalReason,
    message: string,
  ) {
    super('interop_version_unsupported', 400, message, { protocol: 'mcp', requested, supported: [...MCP_REVISIONS], retriable: false, reason });
  }
}

/** `-32021`: the tool needs a client capability the call did not declare (e.g. elicitation). */
export class McpMissingCapabilityError extends DomainError {
  constructor(required: string[]) {
    super('mcp_capability_required', 422, `The MCP server needs client capabilities the call did not declare: ${required.join(', ') || 'unknown'}.`, { requiredCapabilities: required });
  }
}

/** The `input_required` rounds of one logical call went past the bound. */
export class McpRoundsExceededError extends DomainError {
  constructor(maxRounds: number) {
    super('mcp_mrtr_rounds_exceeded', 422, `The MCP tool asked for input more than ${maxRounds} times in one call.`, { maxRounds });
  }
}

/** Whether a revision is in MCP's date form (never `latest`). */
export function isRevisionDate(v: unknown): v is string {
  return typeof v === 'string' && /^[0-9]{4}-[0-9]{2}-[0-9]{2}$/.test(v);
}
