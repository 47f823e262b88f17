import { Injectable } from '@nestjs/common';
import { NodeExecutionContext, NodeExecutionError, NodeExecutionResult, NodeExecutor, NodeExecutorProvider } from '@openwop-host/plugin-sdk';
import { isValidScope, roleOf } from '../../../platform/identity/scopes';
import type { SuspendRequest } from '../engine/run-gates';
import { APPROVAL_RESUME_SCHEMA } from './core-approval.executor';

const MAX_QUORUM = 100;
const MAX_TIMEOUT_SEC = 30 * 24 * 3600;

/** A role that exists or a scope of the host's grammar: what a requirement may name. */
function requirementProblems(where: string, o: Record<string, unknown>): string[] {
  const problems: string[] = [];
  if (o.requiredRole !== undefined && (typeof o.requiredRole !== 'string' || !roleOf(o.requiredRole))) problems.push(`${where}.requiredRole must name a host role`);
  if (o.requiredScope !== undefined && (typeof o.requiredScope !== 'string' || !isValidScope(o.requiredScope))) problems.push(`${where}.requiredScope must be a scope (name:action)`);
  if (o.requiredRole === undefined && o.requiredScope === undefined) problems.push(`${where} needs requiredRole or requiredScope`);
  return problems;
}

/**
 * `core.openwop.governance.approvalGate` (RFC 0051, interrupt-profiles.md; RFC 0093): a role-gated,
 * audited approval gate. Config `{requiredRole?, requiredScope? (at least one), quorum?, override?:
 * {requiredRole?, requiredScope?}, overrideBypassesQuorum?, timeoutSec?, title?}`. It suspends the run
 * on an `approval` interrupt (`interrupt.requested` with the gate's requirement in its data) that only
 * principals satisfying the requirement may resolve (anyone else: 403, the gate stays pending, fail
 * closed); `quorum` distinct grants release it; one reject or the timeout rejects it (fail closed,
 * never auto-approve). The override path (`POST /v1/approvals/{id}/override {reason}`) is open to
 * principals satisfying `override`, records `approval.overridden {principal, reason}` and an audit
 * entry, and counts as one grant unless `overrideBypassesQuorum: true` releases the gate at once.
 * A granted gate completes the node with `{approved: true}`; a rejected one fails it with
 * `approval_denied`.
 */
@Injectable()
@NodeExecutor({ typeId: 'core.openwop.governance.approvalGate', replayPolicy: 'idempotent' })
export class GovernanceApprovalGateExecutor implements NodeExecutorProvider {
  validateConfig(config: Record<string, unknown>): string[] {
    const where = 'core.openwop.governance.approvalGate config';
    const problems = requirementProblems(where, config);
    const q = config.quorum;
    if (q !== undefined && (!Number.isInteger(q) || (q as number) < 1 || (q as number) > MAX_QUORUM)) problems.push(`${where}.quorum must be an integer from 1 to ${MAX_QUORUM}`);
    const o = config.override;
    if (o !== undefined) {
      if (!o || typeof o !== 'object' || Array.isArray(o)) problems.push(`${where}.override must be an object {requiredRole?, requiredScope?, audited?}`);
      else problems.push(...requirementProblems(`${where}.override`, o as Record<string, unknown>));
    }
    if (config.overrideBypassesQuorum !== undefined && typeof config.overrideBypassesQuorum !== 'boolean') problems.push(`${where}.overrideBypassesQuorum must be true or false`);
    const t = config.timeoutSec;
    if (t !== undefined && (!Number.isInteger(t) || (t as number) < 1 || (t as number) > MAX_TIMEOUT_SEC)) problems.push(`${where}.timeoutSec must be an integer from 1 to ${MAX_TIMEOUT_SEC}`);
    if (config.title !== undefined && typeof config.title !== 'string') problems.push(`${where}.title must be a string`);
    return problems;
  }

  async execute(ctx: NodeExecutionContext): Promise<NodeExecutionResult> {
    const c = ctx.config;
    const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
    const o = c.override as { requiredRole?: unknown; requiredScope?: unknown } | undefined;
    const request: SuspendRequest = {
      kind: 'approval',
      title: str(c.title) || `Approve step ${ctx.nodeId} of run ${ctx.runId}`,
      resumeSchema: APPROVAL_RESUME_SCHEMA,
      ...(Number.isInteger(c.quorum) ? { requiredApprovals: c.quorum as number } : {}),
      gate: {
        requiredRole: str(c.requiredRole),
        requiredScope: str(c.requiredScope),
        ...(o ? { override: { requiredRole: str(o.requiredRole), requiredScope: str(o.requiredScope) } } : {}),
        overrideBypassesQuorum: c.overrideBypassesQuorum === true,
        ...(Number.isInteger(c.timeoutSec) ? { timeoutMs: (c.timeoutSec as number) * 1000 } : {}),
      },
    };
    let value: unknown;
    try {
      value = await ctx.interrupt(request);
    } catch (e) {
      if (e instanceof NodeExecutionError && e.code.startsWith('interrupt_')) throw new NodeExecutionError('approval_denied', 'The approval gate was rejected, cancelled or timed out.');
      throw e;
    }
    if ((value as { action?: unknown })?.action === 'reject') throw new NodeExecutionError('approval_denied', 'The approval gate was rejected.');
    return { outputs: { approved: true } };
  }
}
