import { Inject, Injectable, Logger } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { AuditLogService, auditActor } from '../../../platform/audit/audit-log.service';
import { ConflictError, DomainError, ValidationError } from '../../../platform/errors/domain-error';
import type { Principal } from '../../../platform/identity/principal';
import { EventLogService } from '../../../platform/events/event-log.service';
import { SchemaRegistry } from '../../../platform/schemas/schema-registry';
import { TOOL_CATALOG_SETTINGS, ToolCatalogSettings } from '../tool-catalog.config';
import { decideDispatch, DispatchDecision, DispatchPolicyDocument, DispatchPolicySource, DispatchSubject, DispatchVerdict, effectivePolicy } from './dispatch-policy';
import { ToolDispatchPolicyEntity } from './tool-dispatch-policy.entity';

/**
 * The run event of a governed decision (a vendor-prefixed type, run-event.schema.json's second form;
 * payload: schemas/tool-dispatch-decided.schema.json).
 */
export const DISPATCH_DECIDED_EVENT = 'openwopHost.tool.dispatchDecided';

/** Which path asked: a `core.tool` node in a run, the tool-session seam, or the MCP invoke seam. */
export type DispatchPath = 'run' | 'session' | 'mcp-invoke';

/** Where a decision was made, and what became of an approval it asked for. */
export interface DispatchRecordContext {
  path: DispatchPath;
  runId?: string;
  nodeId?: string;
  /** For `approve`: the gate was opened (`pending`) or decided. */
  approval?: 'pending' | 'granted' | 'denied';
  /** Appends the run event (a node's `ctx.emit`); absent outside a run. */
  emit?: (type: string, payload: Record<string, unknown>) => Promise<unknown>;
}

/** A tenant's policy as `GET /v1/tools/dispatch-policy` shows it. */
export interface DispatchPolicyView {
  revision: number;
  source: DispatchPolicySource;
  /** The decisions in force (the tenant's override over the host config over allow-all). */
  tiers: Record<string, DispatchDecision>;
  tools: Record<string, DispatchDecision>;
  /** The host config's default (`tools.dispatchPolicy`), or null. */
  defaults: DispatchPolicyDocument | null;
  /** The tenant's own override, or null. */
  override: DispatchPolicyDocument | null;
  updatedAt: string | null;
  updatedBy: string | null;
}

/** A call the policy refused outright: the tool is never called. */
export class ToolDispatchDeniedError extends DomainError {
  constructor(v: DispatchVerdict) {
    super('tool_dispatch_denied', 403, `The dispatch policy denies calls of ${v.toolId} (tier ${v.safetyTier}).`, details(v));
  }
}

/** A call that needs an approval on a path that cannot wait for one (outside a run): refused, never called. */
export class ToolApprovalRequiredError extends DomainError {
  constructor(v: DispatchVerdict) {
    super('tool_approval_required', 409, `The dispatch policy requires an approval before ${v.toolId} (tier ${v.safetyTier}) is called; only a run can wait for one: call it from a core.tool node.`, details(v));
  }
}

function details(v: DispatchVerdict): Record<string, unknown> {
  return { toolId: v.toolId, safetyTier: v.safetyTier, decision: v.decision, policyRevision: v.policyRevision, rule: v.rule };
}

/** The facts a record of a decision carries (run event payload and audit details alike). */
export function verdictFacts(v: DispatchVerdict, ctx: Pick<DispatchRecordContext, 'approval'> = {}): Record<string, string | number> {
  return {
    toolId: v.toolId,
    safetyTier: v.safetyTier,
    decision: v.decision,
    policyRevision: v.policyRevision,
    policySource: v.policySource,
    rule: v.rule,
    ...(ctx.approval ? { approval: ctx.approval } : {}),
  };
}

/**
 * Governed dispatch: the per-tenant policy (the host config's `tools.dispatchPolicy`, overridden by
 * the tenant through `PUT /v1/tools/dispatch-policy`, versioned by a revision) and the decision every
 * tool-calling path asks for before it calls (`decide`), with its record (`record`): a run event
 * when in a run and an audit entry, both carrying the tier, the decision, the tool and the revision.
 * With no policy configured anywhere every call is allowed and nothing is recorded (as before).
 */
@Injectable()
export class ToolDispatchService {
  private readonly log = new Logger('ToolDispatch');
  private readonly schemas = SchemaRegistry.shared();

  constructor(
    private readonly ds: DataSource,
    private readonly audit: AuditLogService,
    @Inject(TOOL_CATALOG_SETTINGS) private readonly settings: ToolCatalogSettings,
    private readonly events: EventLogService,
  ) {}

  /** The policy in force for a tenant, with its layers. */
  async policy(tenant: string): Promise<DispatchPolicyView> {
    const row = await this.ds.getRepository(ToolDispatchPolicyEntity).findOne({ where: { tenant } });
    return view(this.settings.dispatchPolicy, row);
  }

  /**
   * THE decision (dispatch-policy.ts `decideDispatch` over the tenant's policy in force). In a run
   * (`inRun`), a node running again after its approval gate was opened keeps the gate: an `allow` of a
   * policy loosened meanwhile stays `approve`, so a denied gate is never followed by the call.
   */
  async decide(scope: { tenant: string; workspace?: string }, tool: DispatchSubject, inRun?: { runId: string; nodeId: string }): Promise<DispatchVerdict> {
    const row = await this.ds.getRepository(ToolDispatchPolicyEntity).findOne({ where: { tenant: scope.tenant } });
    const override = row ? { tiers: row.tiers, tools: row.tools } : undefined;
    const policy = effectivePolicy(this.settings.dispatchPolicy, override, row?.revision ?? 0);
    const verdict = decideDispatch(policy, tool);
    if (verdict.decision !== 'allow' || !verdict.governed || !inRun) return verdict;
    // Only a governed decision opens a recorded gate; its `pending` record is in the node's events.
    const earlier = await this.events.read(scope.workspace ? { tenant: scope.tenant, workspace: scope.workspace } : { tenant: scope.tenant }, inRun.runId, { type: DISPATCH_DECIDED_EVENT, nodeId: inRun.nodeId, limit: 100 });
    const gateOpened = earlier.some((e) => e.payload.toolId === tool.toolId && e.payload.approval === 'pending');
    return gateOpened ? decideDispatch(policy, { ...tool, gateOpened }) : verdict;
  }

  /**
   * Records a governed decision: the run event (through `ctx.emit`, in a run) and the audit entry.
   * Nothing when no policy is configured (`verdict.governed` false).
   */
  async record(principal: Principal, verdict: DispatchVerdict, ctx: DispatchRecordContext): Promise<void> {
    if (!verdict.governed) return;
    const facts = verdictFacts(verdict, ctx);
    if (ctx.emit) await ctx.emit(DISPATCH_DECIDED_EVENT, facts);
    await this.ds.transaction((m) =>
      this.audit.record(m, {
        tenant: principal.tenant,
        ...(principal.workspace ? { workspace: principal.workspace } : {}),
        actor: auditActor(principal),
        action: 'tool.dispatch-decided',
        resource: { type: 'tool', id: verdict.toolId },
        details: { ...facts, path: ctx.path, ...(ctx.runId ? { runId: ctx.runId } : {}), ...(ctx.nodeId ? { nodeId: ctx.nodeId } : {}) },
      }),
    );
  }

  /**
   * For a path that cannot suspend (outside a run): decides, records, and throws unless the call is
   * allowed (`tool_dispatch_denied`, or `tool_approval_required` since nothing can wait for a gate).
   */
  async requireAllowed(principal: Principal, tool: DispatchSubject, path: Exclude<DispatchPath, 'run'>): Promise<DispatchVerdict> {
    const verdict = await this.decide(principal, tool);
    if (verdict.decision !== 'allow') await this.record(principal, verdict, { path });
    if (verdict.decision === 'deny') throw new ToolDispatchDeniedError(verdict);
    if (verdict.decision === 'approve') throw new ToolApprovalRequiredError(verdict);
    return verdict;
  }

  /**
   * Replaces the tenant's override (a new revision). `expectedRevision`, when given, must be the
   * revision in force (409 `dispatch_policy_conflict` otherwise), so two editors do not overwrite
   * each other unseen. Audited as `tool.dispatch-policy-changed`.
   */
  async update(principal: Principal, doc: unknown, expectedRevision?: number): Promise<DispatchPolicyView> {
    const problems = this.schemas.validate('tool-dispatch-policy', doc ?? null);
    if (problems.length) throw new ValidationError('The dispatch policy is malformed.', { fields: problems.map((p) => `${p.path || '/'} ${p.message}`) });
    const policy = doc as DispatchPolicyDocument;
    const row = await this.ds.transaction(async (m) => {
      const [current] = (await m.query(`SELECT "revision" FROM "tool_dispatch_policy" WHERE "tenant" = $1 FOR UPDATE`, [principal.tenant])) as Array<{ revision: number }>;
      const revision = current?.revision ?? 0;
      if (expectedRevision !== undefined && expectedRevision !== revision) {
        throw new ConflictError('dispatch_policy_conflict', `The policy is at revision ${revision}, not ${expectedRevision}: read it again before changing it.`, { revision });
      }
      // The increment is the upsert's own (two first writes of a tenant, which no row lock orders, still
      // make two revisions); an expectedRevision is checked again on the row it updates.
      const [written] = (await m.query(
        `INSERT INTO "tool_dispatch_policy" ("tenant", "revision", "tiers", "tools", "updated_at", "updated_by") VALUES ($1, 1, $2, $3, now(), $4)
         ON CONFLICT ("tenant") DO UPDATE SET "revision" = "tool_dispatch_policy"."revision" + 1, "tiers" = EXCLUDED."tiers", "tools" = EXCLUDED."tools", "updated_at" = now(), "updated_by" = EXCLUDED."updated_by"
         WHERE $5::integer IS NULL OR "tool_dispatch_policy"."revision" = $5::integer
         RETURNING *`,
        [principal.tenant, JSON.stringify(policy.tiers ?? {}), JSON.stringify(policy.tools ?? {}), principal.principal, expectedRevision ?? null],
      )) as Array<Record<string, unknown>>;
      if (!written) throw new ConflictError('dispatch_policy_conflict', `The policy changed while this change was made: read it again before changing it.`, { revision: revision + 1 });
      const newRevision = Number(written.revision);
      await this.audit.record(m, {
        tenant: principal.tenant,
        actor: auditActor(principal),
        action: 'tool.dispatch-policy-changed',
        resource: { type: 'tool-dispatch-policy', id: principal.tenant },
        details: {
          policyRevision: newRevision,
          previousRevision: newRevision - 1,
          tiers: Object.entries(policy.tiers ?? {}).map(([k, v]) => `${k}=${v}`).sort(),
          tools: Object.entries(policy.tools ?? {}).map(([k, v]) => `${k}=${v}`).sort(),
        },
      });
      return written;
    });
    this.log.log({ msg: 'tool dispatch policy changed', tenant: principal.tenant, revision: row.revision, by: principal.principal });
    return view(this.settings.dispatchPolicy, {
      tenant: principal.tenant,
      revision: Number(row.revision),
      tiers: row.tiers as ToolDispatchPolicyEntity['tiers'],
      tools: row.tools as ToolDispatchPolicyEntity['tools'],
      updatedAt: row.updated_at as Date,
      updatedBy: String(row.updated_by),
    });
  }
}

function view(defaults: DispatchPolicyDocument | undefined, row: ToolDispatchPolicyEntity | null): DispatchPolicyView {
  const override = row ? { tiers: row.tiers, tools: row.tools } : undefined;
  const p = effectivePolicy(defaults, override, row?.revision ?? 0);
  return {
    revision: p.revision,
    source: p.source,
    tiers: p.tiers,
    tools: p.tools,
    defaults: defaults ? { tiers: defaults.tiers ?? {}, tools: defaults.tools ?? {} } : null,
    override: override ?? null,
    updatedAt: row ? new Date(row.updatedAt).toISOString() : null,
    updatedBy: row?.updatedBy ?? null,
  };
}
