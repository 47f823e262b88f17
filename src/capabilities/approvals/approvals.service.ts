import { AuditLogService, auditActor } from '../../platform/audit/audit-log.service';
import { readEach } from '../../platform/database/connection-reads';
import { Inject, Injectable, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { HOST_CONFIG, HostConfig } from '../../platform/config/host-config';
import { ConflictError, ForbiddenError, NotFoundError, UnprocessableError } from '../../platform/errors/domain-error';
import { EventLogService, HOST_STREAM } from '../../platform/events/event-log.service';
import type { Principal, TenantScope } from '../../platform/identity/principal';
import { requireDelegable } from '../../platform/identity/delegation';
import { keysetPage } from '../../platform/pagination/keyset';
import type { Page, PageRequest } from '../../platform/pagination/page-query';
import { PeriodicTaskService } from '../../platform/scheduler/periodic-task.service';
import { APPROVALS_SETTINGS, ApprovalsSettings } from './approvals.settings';
import { ApprovalDecisionEntity, ApprovalEntity } from './approval.entity';
import { countedVoter, voterKey } from './approval-voters';
import { gateData, GateRequirements, overrideOf, overrideReason, recordOverride, satisfies } from './approval-gate-rules';
import { UUID } from '../../platform/ids';
import { scopedQuery } from '../../platform/tenancy/workspace-scope';
import { WiringFault } from '../../platform/errors/internal-fault';
import { GateExpiry } from './approval-expiry';

export type ApprovalState = 'pending' | 'granted' | 'denied' | 'expired' | 'cancelled';
export type InterruptKind = 'approval' | 'clarification' | 'external-event' | 'credential'; // credential: RFC 0199 §C
export type RejectionPolicy = 'single-veto' | 'majority';

export interface ApprovalView {
  id: string;
  state: ApprovalState;
  /** The interrupt kind: `approval`, or a run step's `clarification` / `external-event` (resolved with a value). */
  kind: InterruptKind;
  title: string;
  subject: { kind: string; id: string };
  runId: string | null;
  nodeId: string | null;
  workflowId: string | null;
  /** Where a person sees the subject, relative to the host's base URL (the console's page, else the API resource). */
  link: string;
  requiredScope: string;
  requiredRole: string | null;
  quorum: number;
  granted: number;
  denied: number;
  rejectionPolicy: RejectionPolicy;
  /** Whether `requestedBy` (a run's owner, a proposal's applier) may approve it. */
  allowSelfApproval: boolean;
  /** The scope designated to record votes for named voters on this gate (besides `approvals:act-as`), if any. */
  namedVotersRecordedBy: string | null;
  /** The JSON Schema a resolving value must satisfy (null: the accept / reject vocabulary of an approval). */
  resumeSchema: Record<string, unknown> | null;
  /** The kind's data (clarification questions, the awaited external event and its correlation). */
  data: Record<string, unknown> | null;
  resolvedBy: string | null;
  decisions: Array<{ principal: string; decision: 'granted' | 'denied'; reason?: string; decidedAt: string; submittedBy?: string }>;
  artifactRef: string;
  requestedBy: string;
  reason: string | null;
  expiresAt: string;
  createdAt: string;
  decidedAt: string | null;
}

/** What a gated subject does when its gate releases or closes (inside the deciding transaction). */
export interface GateSubject {
  /**
   * The scopes the released subject will act with on the releasing approver's behalf (an automation
   * starting runs); asked before the deciding transaction. A granting approver must hold them all.
   */
  requiredScopes?(approval: ApprovalEntity): Promise<string[]>;
  /**
   * Checks of the released subject that must not run inside a transaction (they read on connections of their
   * own, such as the tool catalog's sources: on the embedded engine, whose connections share one session, such a
   * read would wait behind the deciding transaction). Asked before it when this grant is expected to complete the
   * quorum; throwing refuses the decision, which records nothing.
   */
  beforeRelease?(approval: ApprovalEntity, principal: Principal): Promise<void>;
  /**
   * `needed`: what `requiredScopes` answered, which the approver holds (to record as the delegation).
   * `checked`: whether `beforeRelease` ran for this decision (not when another vote completed the quorum meanwhile).
   */
  release(m: EntityManager, approval: ApprovalEntity, principal: Principal, needed: readonly string[], checked: boolean): Promise<void>;
  closed(m: EntityManager, approval: ApprovalEntity): Promise<void>;
  /**
   * Locks the subject before its gate is locked, inside the deciding transaction, so deciding and
   * changing the subject (a run cancelled) always lock in the same order and one of them wins.
   */
  lock?(m: EntityManager, approval: ApprovalEntity): Promise<void>;
}

/** How a decision is made: the value it resolves with, whom it counts for, and what authorizes it. */
export interface DecisionOptions {
  reason?: string;
  /** Whom the vote counts for (a quorum's named approver); default the deciding principal. Another voter is acting-as (`approval-voters.ts`). */
  voter?: string;
  /** The resume value (required to resolve a clarification / external-event gate). */
  resumeValue?: unknown;
  /** A signed interrupt token authorized the decision: the principal is the token's, no scope applies. */
  viaToken?: boolean;
  /** The gate's override path (RFC 0051): the caller must satisfy its requirement and give a reason. */
  override?: boolean;
}

export interface GateRequest {
  subjectKind: string;
  subjectId: string;
  tenant: string;
  workspaceKey: string;
  artifactRef: string;
  artifactType: string;
  title: string;
  /** A run step's gate: the run, node and workflow, recorded with the gate so its item names them. */
  runStep?: { runId: string; nodeId: string; workflowId: string | null };
  /** A run step's interrupt: its kind, resume schema, data, and an approval's own quorum and rejection policy. */
  interrupt?: {
    kind: InterruptKind;
    resumeSchema?: Record<string, unknown>;
    data?: Record<string, unknown>;
    quorum?: number;
    rejectionPolicy?: RejectionPolicy;
    /** Whether the requesting principal may approve (default: the host's setting). */
    allowSelfApproval?: boolean;
    /** The scope designated to record votes for named voters. */
    namedVotersScope?: string;
    /** A governance gate's own requirements (else the host's settings) and override path. */
    gate?: GateRequirements;
  };
}

/** The subject kind of a run step's gate. */
const RUN_STEP = 'run-node';

/**
 * RFC 0051 approval gates. A gate is released only by `quorum` distinct principals holding the
 * required scope (and every scope of the required role), before it expires; one denial closes it
 * (single veto); an expired gate auto-rejects (RFC 0093: fail closed). Nothing is installed unless
 * the gate is granted.
 */
@Injectable()
export class ApprovalsService implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly subjects = new Map<string, GateSubject>();
  private readonly expiry: GateExpiry;

  constructor(
    private readonly ds: DataSource,
    private readonly events: EventLogService,
    private readonly tasks: PeriodicTaskService,
    @Inject(APPROVALS_SETTINGS) private readonly settings: ApprovalsSettings,
    @Inject(HOST_CONFIG) private readonly host: HostConfig,
    private readonly audit: AuditLogService,
  ) {
    this.expiry = new GateExpiry(ds, events, async (m, gate) => this.subjects.get(gate.subjectKind)?.closed(m, gate));
  }

  onApplicationBootstrap(): void {
    this.tasks.register({ name: 'proposals.approval-expiry', intervalMs: this.settings.sweepIntervalMs, run: () => this.expireDue().then(() => undefined) });
  }

  onApplicationShutdown(): void {
    this.expiry.stop();
  }

  registerSubject(kind: string, subject: GateSubject): void {
    this.subjects.set(kind, subject);
  }

  /** Opens a gate inside the caller's transaction and emits `interrupt.requested` (kind approval). */
  async open(m: EntityManager, req: GateRequest, requestedBy: Principal): Promise<ApprovalEntity> {
    const own = req.interrupt?.gate;
    const requiredScope = own?.requiredScope ?? this.settings.requiredScope;
    const requiredRole = own?.requiredScope || own?.requiredRole ? own.requiredRole : this.settings.requiredRole;
    const timeoutMs = own?.timeoutMs ?? this.settings.timeoutMs;
    const kind = req.interrupt?.kind ?? 'approval';
    // A value-resolved interrupt is answered once; an approval needs its own quorum or the host's.
    const quorum = kind === 'approval' ? (req.interrupt?.quorum ?? this.settings.quorum) : 1;
    const rejectionPolicy = req.interrupt?.rejectionPolicy ?? 'single-veto';
    const repo = m.getRepository(ApprovalEntity);
    const [{ expires }] = (await m.query(`SELECT now() + ($1::bigint * interval '1 millisecond') AS expires`, [timeoutMs])) as Array<{ expires: Date }>;
    const gate = await repo.save(
      repo.create({
        tenant: req.tenant,
        workspaceKey: req.workspaceKey,
        subjectKind: req.subjectKind,
        subjectId: req.subjectId,
        title: req.title,
        runId: req.runStep?.runId ?? null,
        nodeId: req.runStep?.nodeId ?? null,
        workflowId: req.runStep?.workflowId ?? null,
        state: 'pending',
        requiredScope,
        requiredRole: requiredRole ?? null,
        quorum,
        kind,
        // Who may vote (an approval's): whether the requester may approve, who may record named votes.
        allowSelfApproval: kind !== 'approval' || (req.interrupt?.allowSelfApproval ?? this.settings.allowSelfApproval),
        namedVotersScope: kind === 'approval' ? (req.interrupt?.namedVotersScope ?? null) : null,
        resumeSchema: req.interrupt?.resumeSchema ?? null,
        // A quorum the workflow set is a panel of named voters; the host's own quorum counts principals.
        data: gateData(kind, req.interrupt),
        rejectionPolicy,
        artifactRef: req.artifactRef,
        requestedBy: requestedBy.principal,
        expiresAt: new Date(expires),
      }),
    );
    // ApprovalData / ClarificationData / ExternalEventData exactly (suspend-request.schema.json): what the run's own log
    // carries. The host's feed adds the gate's identity and requirement (runId, nodeId, interruptId; gateId,
    // requiredScope, requiredRole, quorum), as it always has.
    const data =
      kind === 'approval'
        ? {
            artifactId: req.subjectId,
            artifactType: req.artifactType,
            title: req.title,
            actions: ['accept', 'reject'],
            requiredApprovals: quorum,
            rejectionPolicy,
            ...(Array.isArray(req.interrupt?.data?.approversList) ? { approversList: req.interrupt.data.approversList } : {}),
            ...(requiredRole ? { approverRoleRefs: [requiredRole] } : {}),
          }
        : { ...(req.interrupt?.data ?? {}) };
    const key = `${req.subjectKind}:${req.subjectId}:${gate.id}`;
    const schema = req.interrupt?.resumeSchema ? { resumeSchema: req.interrupt.resumeSchema } : {};
    const requirement = kind === 'approval' ? { gateId: gate.id, requiredScope, ...(requiredRole ? { requiredRole } : {}), quorum } : {};
    const ids = req.runStep ? { runId: req.runStep.runId, nodeId: req.runStep.nodeId, interruptId: gate.id } : {};
    const scope = scopeOf(gate);
    await this.events.appendMany(
      [
        { scope, streamId: HOST_STREAM, type: 'interrupt.requested', payload: { kind, key, timeoutMs, ...ids, ...schema, data: { ...data, ...requirement } }, correlationId: req.subjectId },
        // Each visit of a run step its own key, so a gate asked again is announced again.
        ...(req.runStep ? [{ scope, streamId: req.runStep.runId, type: 'interrupt.requested', payload: { kind, key, timeoutMs, ...schema, data }, correlationId: req.subjectId, nodeId: req.runStep.nodeId }] : []),
      ],
      { manager: m },
    );
    this.expiry.schedule(gate.id, timeoutMs, this.settings.sweepIntervalMs);
    return gate;
  }

  /** A page of the caller's approval gates, newest first. */
  async list(scope: TenantScope, q: PageRequest & { state?: ApprovalState } = {}): Promise<Page<ApprovalView>> {
    const qb = scopedQuery(this.ds.getRepository(ApprovalEntity).createQueryBuilder('a'), scope, 'workspace_key');
    if (q.state) qb.andWhere('a.state = :s', { s: q.state });
    const page = await keysetPage(qb, q, {
      keys: [{ column: 'a.created_at', type: 'timestamptz' }, { column: 'a.id', type: 'uuid' }],
      direction: 'DESC',
      binding: { list: 'approvals', tenant: scope.tenant, workspace: scope.workspace, filters: { state: q.state } },
    });
    return { items: await Promise.all(page.items.map((r) => this.view(this.ds.manager, r))), nextCursor: page.nextCursor };
  }

  async get(scope: TenantScope, id: string): Promise<ApprovalView> {
    const row = await this.find(this.ds.manager, scope, id, false);
    return this.view(this.ds.manager, row);
  }

  async grant(principal: Principal, id: string, reason?: string): Promise<ApprovalView> {
    return this.decide(principal, id, 'granted', { reason });
  }

  async deny(principal: Principal, id: string, reason?: string): Promise<ApprovalView> {
    return this.decide(principal, id, 'denied', { reason });
  }

  /**
   * One decision on a gate with the options of an interrupt resolution: a named voter, the resume
   * value (a clarification's answers, an external event), or a signed token as the authority.
   */
  async vote(principal: Principal, id: string, decision: 'granted' | 'denied', opts: DecisionOptions): Promise<ApprovalView> {
    return this.decide(principal, id, decision, opts);
  }

  /** Closes a pending gate without release (its subject changed or was withdrawn). */
  async cancel(m: EntityManager, approvalId: string, principal: Principal, reason: string): Promise<void> {
    const gate = await m.getRepository(ApprovalEntity).createQueryBuilder('a').setLock('pessimistic_write').where('a.id = :id', { id: approvalId }).getOne();
    if (!gate || gate.state !== 'pending') return;
    await m.getRepository(ApprovalEntity).update({ id: gate.id }, { state: 'cancelled', reason, decidedAt: () => 'now()' });
    await this.events.append(scopeOf(gate), HOST_STREAM, 'approval.rejected', { gateId: gate.id, principal: principal.principal, reason }, { manager: m, correlationId: gate.subjectId });
  }

  /** Auto-rejects every pending gate past its deadline (fail closed; approval-expiry.ts). Returns how many expired. */
  expireDue(): Promise<number> {
    return this.expiry.expireDue();
  }

  private async decide(principal: Principal, id: string, decision: 'granted' | 'denied', opts: DecisionOptions = {}): Promise<ApprovalView> {
    const { reason } = opts;
    // A grant may release work that acts for the approver: what it needs is read before the lock.
    const peek = await this.find(this.ds.manager, principal, id, false);
    const needed: string[] = decision === 'granted' ? ((await this.subjects.get(peek.subjectKind)?.requiredScopes?.(peek)) ?? []) : [];
    // A grant that completes the quorum releases the subject: what it checks outside a transaction, now.
    const beforeRelease = this.subjects.get(peek.subjectKind)?.beforeRelease;
    let checked = false;
    // (Not for a decision the transaction refuses anyway: its 403 or 409 comes first.)
    const override = opts.override === true;
    const reasonOfOverride = override ? overrideReason(reason) : undefined;
    if (decision === 'granted' && beforeRelease && peek.state === 'pending' && (opts.viaToken || this.mayDecide(principal, peek, override))) {
      const { key } = countedVoter(principal, peek, decision, opts.voter, opts.viaToken === true);
      const votes = await this.ds.getRepository(ApprovalDecisionEntity).findBy({ tenant: peek.tenant, approvalId: peek.id });
      const granted = votes.filter((v) => v.decision === 'granted').length;
      if (!votes.some((v) => (v.voterKey ?? voterKey(v.principal)) === key) && (granted + 1 >= peek.quorum || (override && !!overrideOf(peek.data)?.bypassesQuorum))) {
        await beforeRelease(peek, principal);
        checked = true;
      }
    }
    const outcome = await this.ds.transaction(async (m) => {
      // The subject first, then the gate: the order every writer of both follows.
      await this.subjects.get(peek.subjectKind)?.lock?.(m, peek);
      const gate = await this.find(m, principal, id, true);
      if (gate.state === 'pending' && gate.expiresAt.getTime() <= (await dbNow(m)).getTime()) {
        // Expired but not yet swept: close it now (committed), then refuse the decision.
        await this.expiry.expire(m, gate);
        return { closed: 'expired' as const };
      }
      if (gate.state !== 'pending') throw new ConflictError('approval_closed', `The approval is ${gate.state}.`, { state: gate.state });
      const kind = (gate.kind ?? 'approval') as InterruptKind;
      if (decision === 'granted' && kind !== 'approval' && opts.resumeValue === undefined) {
        throw new UnprocessableError('resume_value_required', `A ${kind} interrupt is resolved with a value: POST /v1/runs/{runId}/interrupts/{nodeId} {resumeValue}.`, { kind });
      }
      if (override && (decision !== 'granted' || kind !== 'approval' || !overrideOf(gate.data))) throw new ConflictError('override_unavailable', 'This gate offers no override path.');
      if (!opts.viaToken && !this.mayDecide(principal, gate, override)) {
        // Fail closed: the gate stays pending and records nothing.
        const need = override ? overrideOf(gate.data)! : gate;
        const details = { ...(need.requiredScope ? { requiredScopes: [need.requiredScope] } : {}), ...(need.requiredRole ? { requiredRole: need.requiredRole } : {}) };
        throw new ForbiddenError(`The credential does not satisfy this approval gate${override ? "'s override path" : ''}.`, details);
      }
      // Fail closed as well: an approver who could not do what the released work will do records nothing.
      if (decision === 'granted') requireDelegable(principal, needed, 'Releasing this approval');
      const decisions = m.getRepository(ApprovalDecisionEntity);
      // Whom it counts for, under its canonical key (403: acting-as without the permission, self-approval refused).
      const { voter, key, actingAs } = countedVoter(principal, gate, decision, opts.voter, opts.viaToken === true);
      const inserted = (await m.query(
        `INSERT INTO "approval_decision" ("tenant", "approval_id", "principal", "voter_key", "decision", "reason", "submitted_by") VALUES ($1, $2, $3, $4, $5, $6, $7)
         ON CONFLICT ("tenant", "approval_id", "voter_key") DO NOTHING RETURNING "id"`,
        [gate.tenant, gate.id, voter, key, decision, reason ?? null, principal.principal],
      )) as Array<{ id: string }>;
      if (!inserted.length) throw new ConflictError('approval_already_decided', actingAs ? `Voter "${voter}" has already decided on the approval.` : 'This principal has already decided on the approval.');
      const scope = scopeOf(gate);
      const evOpts = { manager: m, correlationId: gate.subjectId };
      // Recorded last in each branch (the tenant's audit chain stays locked only until the commit).
      // The free-text reason is left out: it is the caller's prose, not a fact the chain vouches for.
      const audited = (outcome: 'pending' | 'denied' | 'granted') =>
        this.audit.record(m, {
          tenant: gate.tenant, workspace: scope.workspace, actor: auditActor(principal), action: 'approval.decided', resource: { type: 'approval', id: gate.id },
          details: { decision, voter, castBy: principal.principal, actingAs, outcome, kind, subjectKind: gate.subjectKind, subjectId: gate.subjectId, runId: gate.runId ?? undefined, nodeId: gate.nodeId ?? undefined },
        });
      const node = gate.nodeId ?? gate.subjectKind;
      const resolved = { nodeId: node, interruptId: gate.id, kind, ...(gate.runId ? { runId: gate.runId } : {}), resolvedAt: new Date().toISOString() };
      if (decision === 'denied') {
        await this.events.append(scope, HOST_STREAM, 'approval.rejected', { gateId: gate.id, principal: voter, ...(reason ? { reason } : {}) }, evOpts);
        // Single veto: one reject closes. Majority: rejects from more than half of the quorum close.
        const denied = await decisions.countBy({ tenant: gate.tenant, approvalId: gate.id, decision: 'denied' });
        if (gate.rejectionPolicy === 'majority' && denied * 2 <= gate.quorum) {
          await audited('pending');
          return { closed: undefined };
        }
        await m.getRepository(ApprovalEntity).update({ id: gate.id }, { state: 'denied', reason: reason ?? 'denied', decidedAt: () => 'now()', resumeValue: { action: 'reject' }, resolvedBy: voter });
        await this.events.appendMany([HOST_STREAM, ...(gate.runId ? [gate.runId] : [])].map((streamId) => ({ scope, streamId, type: 'interrupt.resolved', payload: { ...resolved, resumeValue: { action: 'reject' }, resolvedBy: voter }, correlationId: gate.subjectId, ...(streamId === gate.runId && gate.nodeId ? { nodeId: gate.nodeId } : {}) })), { manager: m }); // the host's feed and the run's own log
        await this.subjects.get(gate.subjectKind)?.closed(m, gate);
        await audited('denied');
        return { closed: undefined };
      }
      const granted = await decisions.countBy({ tenant: gate.tenant, approvalId: gate.id, decision: 'granted' });
      await this.events.append(scope, HOST_STREAM, 'approval.granted', { gateId: gate.id, principal: voter, quorumProgress: { granted, required: gate.quorum } }, evOpts);
      // The override path (RFC 0051 §B, RFC 0093): its own event and audit entry, and past the quorum only when the gate says so.
      const released = granted >= gate.quorum || (override && overrideOf(gate.data)!.bypassesQuorum);
      if (override) await recordOverride({ events: this.events, audit: this.audit }, gate, scopeOf(gate), principal, { voter, reason: reasonOfOverride!, released }, evOpts);
      if (released) {
        const resumeValue = opts.resumeValue ?? { action: 'accept' };
        // Past the quorum the last voter closes it (interrupt.md: decidedBy of the closing approver).
        await m.getRepository(ApprovalEntity).update({ id: gate.id }, { state: 'granted', decidedAt: () => 'now()', resumeValue: resumeValue as object, resolvedBy: voter });
        await this.events.appendMany([HOST_STREAM, ...(gate.runId ? [gate.runId] : [])].map((streamId) => ({ scope, streamId, type: 'interrupt.resolved', payload: { ...resolved, resumeValue, resolvedBy: voter }, correlationId: gate.subjectId, ...(streamId === gate.runId && gate.nodeId ? { nodeId: gate.nodeId } : {}) })), { manager: m }); // the host's feed and the run's own log
        const subject = this.subjects.get(gate.subjectKind);
        if (!subject) throw new WiringFault(`no gate subject "${gate.subjectKind}"`);
        // Installs in this transaction: if the install fails, the grant is not recorded either.
        await subject.release(m, gate, principal, needed, checked);
      }
      await audited(released ? 'granted' : 'pending');
      return { closed: undefined };
    });
    if (outcome.closed) throw new ConflictError('approval_closed', 'The approval expired before this decision.', { state: outcome.closed });
    return this.get(principal, id);
  }

  /** The console's page of the subject when the console is served, else the subject's API resource. */
  private linkOf(kind: string, id: string, gateId: string): string {
    const page = kind === RUN_STEP ? 'runs' : kind === 'proposal' ? 'proposals' : undefined;
    if (!page) return `/v1/approvals/${gateId}`;
    return this.host.consoleEnabled ? `/console/#/${page}/${encodeURIComponent(id)}` : `/v1/${page}/${encodeURIComponent(id)}`;
  }

  /** Whether the principal may decide the gate: its scope and role, or for an override, the override path's. */
  private mayDecide(p: Principal, gate: ApprovalEntity, override = false): boolean {
    const path = override ? overrideOf(gate.data) : gate;
    return !!path && satisfies(p, path);
  }

  /** The pending gate of a run step (tenant- and workspace-scoped), if any. */
  async pendingOfRunNode(scope: TenantScope, runId: string, nodeId: string): Promise<ApprovalEntity | undefined> {
    if (!UUID.test(runId)) return undefined;
    const qb = scopedQuery(this.ds.getRepository(ApprovalEntity).createQueryBuilder('a').where('a.run_id = :r AND a.node_id = :n AND a.state = :s', { r: runId, n: nodeId, s: 'pending' }), scope, 'workspace_key');
    return (await qb.orderBy('a.created_at', 'DESC').getOne()) ?? undefined;
  }

  /** The latest gate of a run step in any state (tenant- and workspace-scoped), if it ever had one. */
  async latestOfRunNode(scope: TenantScope, runId: string, nodeId: string): Promise<ApprovalEntity | undefined> {
    if (!UUID.test(runId)) return undefined;
    const qb = scopedQuery(this.ds.getRepository(ApprovalEntity).createQueryBuilder('a').where('a.run_id = :r AND a.node_id = :n', { r: runId, n: nodeId }), scope, 'workspace_key');
    return (await qb.orderBy('a.created_at', 'DESC').getOne()) ?? undefined;
  }

  /** The pending gates of a run, oldest first (its snapshot's interrupt). */
  async pendingOfRun(tenant: string, runId: string, m: EntityManager = this.ds.manager): Promise<ApprovalView[]> {
    const rows = await m.getRepository(ApprovalEntity).find({ where: { tenant, runId, state: 'pending' }, order: { createdAt: 'ASC' } });
    return readEach(m, rows, (r) => this.view(m, r));
  }

  /**
   * A gate's state and the value it was resolved with, for the subject that opened it (read with the
   * caller's manager inside its transaction; `tenant` narrows the read when the caller knows it).
   */
  async stateOf(id: string, opts: { tenant?: string; manager?: EntityManager } = {}): Promise<{ state: ApprovalState; resumeValue: unknown } | undefined> {
    if (!UUID.test(id)) return undefined;
    const row = await (opts.manager ?? this.ds.manager).getRepository(ApprovalEntity).findOne({ select: { state: true, resumeValue: true }, where: opts.tenant === undefined ? { id } : { id, tenant: opts.tenant } });
    return row ? { state: row.state as ApprovalState, resumeValue: row.resumeValue ?? null } : undefined;
  }

  /** A gate by id in any tenant: only for a caller holding a verified signed token naming it. */
  async byIdUnscoped(id: string): Promise<ApprovalEntity | undefined> {
    if (!UUID.test(id)) return undefined;
    return (await this.ds.getRepository(ApprovalEntity).findOneBy({ id })) ?? undefined;
  }

  viewOf(a: ApprovalEntity): Promise<ApprovalView> {
    return this.view(this.ds.manager, a);
  }

  private async find(m: EntityManager, scope: TenantScope, id: string, lock: boolean): Promise<ApprovalEntity> {
    if (!UUID.test(id)) throw new NotFoundError('No such approval.');
    const qb = scopedQuery(m.getRepository(ApprovalEntity).createQueryBuilder('a').where('a.id = :id', { id }), scope, 'workspace_key');
    if (lock) qb.setLock('pessimistic_write');
    const row = await qb.getOne();
    if (!row) throw new NotFoundError('No such approval.');
    return row;
  }

  private async view(m: EntityManager, a: ApprovalEntity): Promise<ApprovalView> {
    const decisions = await m.getRepository(ApprovalDecisionEntity).find({ where: { tenant: a.tenant, approvalId: a.id }, order: { createdAt: 'ASC' } });
    const runStep = a.subjectKind === RUN_STEP;
    const runId = a.runId ?? (runStep ? a.subjectId : null);
    // Rows opened before the host recorded the node name it in their artifact ref (`run:<runId>#<nodeId>`).
    const nodeId = a.nodeId ?? (runStep ? (/^run:[^#]+#(.+)$/.exec(a.artifactRef)?.[1] ?? null) : null);
    return {
      id: a.id,
      state: a.state as ApprovalState,
      kind: (a.kind ?? 'approval') as InterruptKind,
      title: a.title ?? (runStep ? `Approve step ${nodeId ?? '?'} of run ${a.subjectId}` : `Approve ${a.subjectKind} ${a.subjectId}`),
      subject: { kind: a.subjectKind, id: a.subjectId },
      runId,
      nodeId,
      workflowId: a.workflowId,
      link: this.linkOf(a.subjectKind, a.subjectId, a.id),
      requiredScope: a.requiredScope,
      requiredRole: a.requiredRole,
      quorum: a.quorum,
      granted: decisions.filter((d) => d.decision === 'granted').length,
      denied: decisions.filter((d) => d.decision === 'denied').length,
      rejectionPolicy: (a.rejectionPolicy ?? 'single-veto') as RejectionPolicy,
      allowSelfApproval: a.allowSelfApproval,
      namedVotersRecordedBy: a.namedVotersScope ?? null,
      resumeSchema: a.resumeSchema ?? null,
      data: a.data ?? null,
      resolvedBy: a.resolvedBy ?? null,
      decisions: decisions.map((d) => ({
        principal: d.principal,
        decision: d.decision as 'granted' | 'denied',
        ...(d.reason ? { reason: d.reason } : {}),
        decidedAt: d.createdAt.toISOString(),
        ...(d.submittedBy && d.submittedBy !== d.principal ? { submittedBy: d.submittedBy } : {}),
      })),
      artifactRef: a.artifactRef,
      requestedBy: a.requestedBy,
      reason: a.reason,
      expiresAt: a.expiresAt.toISOString(),
      createdAt: a.createdAt.toISOString(),
      decidedAt: a.decidedAt ? a.decidedAt.toISOString() : null,
    };
  }
}

function scopeOf(gate: ApprovalEntity): TenantScope {
  return { tenant: gate.tenant, workspace: gate.workspaceKey || undefined };
}

async function dbNow(m: EntityManager): Promise<Date> {
  return new Date(((await m.query('SELECT now() AS now')) as Array<{ now: Date }>)[0].now);
}
