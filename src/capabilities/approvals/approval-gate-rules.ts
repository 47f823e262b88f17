import type { EntityManager } from 'typeorm';
import { AuditLogService, auditActor } from '../../platform/audit/audit-log.service';
import { ValidationError } from '../../platform/errors/domain-error';
import { EventLogService, HOST_STREAM } from '../../platform/events/event-log.service';
import type { Principal, TenantScope } from '../../platform/identity/principal';
import { roleOf } from '../../platform/identity/scopes';
import type { ApprovalEntity } from './approval.entity';

/**
 * A governance gate's own requirements (RFC 0051 `core.openwop.governance.approvalGate`): who may
 * resolve it (a scope and/or a role, else the host's approval settings), the role-gated override
 * path, whether an override releases the gate past its quorum (RFC 0093, default no: it counts as
 * one vote), and its timeout (expiry rejects the gate).
 */
export interface GateRequirements {
  requiredScope?: string;
  requiredRole?: string;
  override?: { requiredScope?: string; requiredRole?: string };
  overrideBypassesQuorum?: boolean;
  timeoutMs?: number;
}

/** What a principal must hold: a scope and, when named, every scope of a role (an unknown role is satisfied by nobody). */
export function satisfies(p: Pick<Principal, 'scopes'>, need: { requiredScope?: string | null; requiredRole?: string | null }): boolean {
  if (need.requiredScope && !p.scopes.has(need.requiredScope)) return false;
  if (need.requiredRole) {
    const role = roleOf(need.requiredRole);
    if (!role || !role.scopes.every((s) => p.scopes.has(s))) return false;
  }
  return true;
}

/** The override path a gate offers (kept in its data when it was opened), if any. */
export function overrideOf(data: Record<string, unknown> | null): { requiredScope?: string; requiredRole?: string; bypassesQuorum: boolean } | undefined {
  const o = (data as { override?: { requiredScope?: string; requiredRole?: string; bypassesQuorum?: boolean } } | null)?.override;
  if (!o || (!o.requiredScope && !o.requiredRole)) return undefined;
  return { requiredScope: o.requiredScope, requiredRole: o.requiredRole, bypassesQuorum: o.bypassesQuorum === true };
}

/** An override's reason: required, the audit breadcrumb (RFC 0051 §B), bounded. */
export function overrideReason(reason: string | undefined): string {
  const r = reason?.trim();
  if (!r) throw new ValidationError('An override needs a reason: it is recorded on approval.overridden and in the audit log.', { field: 'reason' });
  return r;
}

/** A gate's data: the request's, marked when the workflow set the quorum (a panel of named voters), with its override path. */
export function gateData(kind: string, i: { data?: Record<string, unknown>; quorum?: number; gate?: GateRequirements } | undefined): Record<string, unknown> | null {
  if (kind !== 'approval') return i?.data ?? null;
  const o = i?.gate?.override;
  const out = {
    ...(i?.data ?? {}),
    ...(i?.quorum !== undefined ? { quorumSource: 'workflow' } : {}),
    ...(o && (o.requiredScope || o.requiredRole) ? { override: { ...o, bypassesQuorum: i?.gate?.overrideBypassesQuorum === true } } : {}),
  };
  return Object.keys(out).length ? out : (i?.data ?? null);
}

/**
 * The override path taken (RFC 0051 §B): `approval.overridden {gateId, principal, reason, released}`
 * on the tenant's stream and an `approval.overridden` audit entry (the free-text reason stays out of
 * the chain, as every decision's), in the deciding transaction.
 */
export async function recordOverride(
  deps: { events: EventLogService; audit: AuditLogService },
  gate: ApprovalEntity,
  scope: TenantScope,
  p: Principal,
  o: { voter: string; reason: string; released: boolean },
  evOpts: { manager: EntityManager; correlationId: string },
): Promise<void> {
  const where = gate.runId ? { runId: gate.runId, nodeId: gate.nodeId } : {};
  await deps.events.append(scope, HOST_STREAM, 'approval.overridden', { gateId: gate.id, principal: o.voter, reason: o.reason, released: o.released, ...where }, evOpts);
  await deps.audit.record(evOpts.manager, {
    tenant: gate.tenant, workspace: scope.workspace, actor: auditActor(p), action: 'approval.overridden', resource: { type: 'approval', id: gate.id },
    details: { voter: o.voter, released: o.released, runId: gate.runId ?? undefined, nodeId: gate.nodeId ?? undefined },
  });
}
