import { AuditLogService, auditActor } from '../../platform/audit/audit-log.service';
import { isDeepStrictEqual } from 'node:util';
import { Inject, Injectable, OnModuleInit } from '@nestjs/common';
import { PROPOSAL_KINDS, ProposalDraft, ProposalKind } from '@openwop-host/plugin-sdk';
import { DataSource, EntityManager } from 'typeorm';
import { ArtifactRegistryService, artifactText, textRef } from '../../platform/artifacts/artifact-registry.service';
import { InstallChecks } from '../../platform/artifacts/install-checks';
import { ConflictError, NotFoundError, UnprocessableError, ValidationError } from '../../platform/errors/domain-error';
import { EventLogService, HOST_STREAM } from '../../platform/events/event-log.service';
import { delegationOf, requireDelegable } from '../../platform/identity/delegation';
import type { Principal, TenantScope } from '../../platform/identity/principal';
import { keysetPage } from '../../platform/pagination/keyset';
import type { Page, PageRequest } from '../../platform/pagination/page-query';
import { ApprovalsService, type ApprovalEntity } from '../approvals';
import { ProposalEntity } from './proposal.entity';
import { ProposalState, ProposalView, toProposalView } from './proposal-view';
import { PROPOSALS_SETTINGS, ProposalsSettings, REGISTRY_KIND } from './proposals.settings';
import { UUID } from '../../platform/ids';
import { scopedQuery } from '../../platform/tenancy/workspace-scope';

export interface ProposalQuery extends PageRequest {
  state?: ProposalState;
  kind?: ProposalKind;
}

/** A draft from a synthesizer, or one submitted from outside (which carries no synthesis evidence). */
export type NewProposal = Omit<ProposalDraft, 'evidenceKey'> & {
  /** Synthesis evidence: at most one proposal per evidence key and scope. */
  evidenceKey?: string;
  /** The artifact's JSON text exactly as submitted (stored and installed byte for byte); else `JSON.stringify(artifact)`. */
  artifactText?: string;
};

export interface ProposalRevision {
  artifact?: Record<string, unknown>;
  /** The revised artifact's JSON text exactly as submitted. */
  artifactText?: string;
  title?: string;
  rationale?: string;
}

export type ApplyResult =
  | { status: 'applied'; installedArtifactRef: string; approvalId: string | null; proposal: ProposalView }
  | { status: 'pending-approval'; pendingApprovalId: string; proposal: ProposalView };

const OPEN: readonly string[] = ['draft', 'revised'];

/**
 * Reviewable-learning proposals (RFC 0096). Proposals are inert rows: nothing but `apply` (or the
 * release of its approval gate) reads their artifact for anything other than review, and `apply`
 * installs exactly the stored bytes (the artifact's JSON text as submitted) through the pack registry, in the same transaction
 * that marks the proposal applied and emits `proposal.activated`.
 */
@Injectable()
export class ProposalsService implements OnModuleInit {
  constructor(
    private readonly ds: DataSource,
    private readonly registry: ArtifactRegistryService,
    private readonly events: EventLogService,
    private readonly approvals: ApprovalsService,
    @Inject(PROPOSALS_SETTINGS) private readonly settings: ProposalsSettings,
    private readonly checks: InstallChecks,
    private readonly audit: AuditLogService,
  ) {}

  onModuleInit(): void {
    this.approvals.registerSubject('proposal', {
      requiredScopes: (gate) => this.gateAuthority(gate),
      beforeRelease: (gate, principal) => this.beforeRelease(gate, principal),
      release: (m, gate, principal, needed, checked) => this.release(m, gate, principal, needed, checked),
      closed: async (m, gate) => {
        await m.getRepository(ProposalEntity).update({ id: gate.subjectId, pendingApprovalId: gate.id }, { pendingApprovalId: null });
      },
    });
  }

  /** The proposal kinds whose registry kind has an installer right now (what can be applied). */
  installableKinds(): ProposalKind[] {
    return PROPOSAL_KINDS.filter((k) => this.registry.hasKind(REGISTRY_KIND[k]));
  }

  /** A page of the caller's proposals, newest first. */
  async list(scope: TenantScope, q: ProposalQuery = {}): Promise<Page<ProposalView>> {
    const qb = scopedQuery(this.ds.getRepository(ProposalEntity).createQueryBuilder('p'), scope, 'workspace_key');
    if (q.state) qb.andWhere('p.state = :s', { s: q.state });
    if (q.kind) qb.andWhere('p.kind = :k', { k: q.kind });
    const page = await keysetPage(qb, q, {
      keys: [{ column: 'p.created_at', type: 'timestamptz' }, { column: 'p.id', type: 'uuid' }],
      direction: 'DESC',
      binding: { list: 'proposals', tenant: scope.tenant, workspace: scope.workspace, filters: { state: q.state, kind: q.kind } },
    });
    return { items: page.items.map(toProposalView), nextCursor: page.nextCursor };
  }

  async get(scope: TenantScope, id: string): Promise<ProposalView> {
    return toProposalView(await this.find(this.ds.manager, scope, id, false));
  }

  /** Creates a `draft` (external synthesizers, built-in synthesis). Undefined when the evidence already produced one. */
  async create(principal: Principal, input: NewProposal): Promise<ProposalView | undefined> {
    if (!PROPOSAL_KINDS.includes(input.kind)) throw new ValidationError(`Unknown proposal kind "${input.kind}".`);
    if (!isPlainObject(input.artifact)) throw new ValidationError('artifact must be a JSON object.', { path: '/artifact' });
    const bytes = storedText(input.artifact, input.artifactText);
    const ref = textRef(bytes);
    const workspaceKey = principal.workspace ?? '';
    return this.ds.transaction(async (m) => {
      const duplicateOf = await this.detectDuplicate(m, principal, input.kind, input.artifact, ref);
      // The unique (tenant, workspace, evidence) index decides between racing synthesis passes.
      const inserted = (await m.query(
        `INSERT INTO "proposal" ("tenant","workspace_key","principal","kind","state","title","rationale","artifact_bytes","artifact_ref","source_run_ids","synthesizer_model","evidence_key","duplicate_of")
         VALUES ($1,$2,$3,$4,'draft',$5,$6,$7,$8,$9,$10,$11,$12)
         ON CONFLICT ("tenant","workspace_key","evidence_key") DO NOTHING RETURNING "id"`,
        [
          principal.tenant,
          workspaceKey,
          principal.principal,
          input.kind,
          input.title ?? null,
          input.rationale ?? null,
          bytes,
          ref,
          input.sourceRunIds,
          input.synthesizerModel ?? null,
          input.evidenceKey ?? null,
          duplicateOf,
        ],
      )) as Array<{ id: string }>;
      if (!inserted.length) return undefined;
      const row = await m.getRepository(ProposalEntity).findOneByOrFail({ id: inserted[0].id });
      await this.events.append(
        principal,
        HOST_STREAM,
        'proposal.created',
        { proposalId: row.id, kind: row.kind, sourceRunIds: row.sourceRunIds, duplicateOf: row.duplicateOf },
        { manager: m, correlationId: row.id },
      );
      return toProposalView(row);
    });
  }

  /** `draft | revised → revised`. Never installs or activates anything. */
  async revise(principal: Principal, id: string, patch: ProposalRevision): Promise<ProposalView> {
    if (patch.artifact === undefined && patch.title === undefined && patch.rationale === undefined) {
      throw new ValidationError('Send at least one of artifact, title or rationale.');
    }
    if (patch.artifact !== undefined && !isPlainObject(patch.artifact)) throw new ValidationError('artifact must be a JSON object.', { path: '/artifact' });
    return this.ds.transaction(async (m) => {
      const row = await this.find(m, principal, id, true);
      if (!OPEN.includes(row.state)) {
        throw new ConflictError('invalid_proposal_state', `A ${row.state} proposal cannot be revised.`, { state: row.state });
      }
      if (patch.artifact !== undefined) {
        const registryKind = REGISTRY_KIND[row.kind as ProposalKind];
        // A revision must leave an installable artifact (when its kind can be installed at all).
        if (this.registry.hasKind(registryKind)) {
          const violations = await this.registry.validate(registryKind, patch.artifact);
          if (violations.length) {
            throw new UnprocessableError('validation_error', `The artifact is malformed for kind "${row.kind}".`, { kind: row.kind, violations });
          }
        }
        row.artifactBytes = storedText(patch.artifact, patch.artifactText);
        row.artifactRef = textRef(row.artifactBytes);
        row.duplicateOf = await this.detectDuplicate(m, scopeOf(row), row.kind as ProposalKind, patch.artifact, row.artifactRef, row.id);
      }
      if (patch.title !== undefined) row.title = patch.title;
      if (patch.rationale !== undefined) row.rationale = patch.rationale;
      // Approvers were asked about the previous bytes: a revision withdraws that gate.
      if (row.pendingApprovalId) {
        await this.approvals.cancel(m, row.pendingApprovalId, principal, 'superseded by a revision');
        row.pendingApprovalId = null;
      }
      row.state = 'revised';
      return toProposalView(await m.getRepository(ProposalEntity).save(row));
    });
  }

  /**
   * Activation. The route has already required the activation scope (403 otherwise, before this
   * runs). direct-rbac installs now; approval-gate opens (or returns the open) gate.
   */
  async apply(principal: Principal, id: string): Promise<ApplyResult> {
    // What the installed artifact will act with (an automation starts runs as its installer), worked
    // out before the proposal is locked: it reads the chain and the tool catalog.
    const peek = await this.find(this.ds.manager, principal, id, false);
    const needed = OPEN.includes(peek.state) ? await this.authorityOf(peek) : [];
    if (this.settings.activation === 'direct-rbac') requireDelegable(principal, needed, `This ${peek.kind}`);
    // What this host could not run is refused before it is installed or put before approvers. Checked before
    // the transaction (which then requires the very bytes checked): the checks read the tool catalog, whose
    // sources read on connections of their own, and on the embedded engine, whose connections share one
    // session, such a read would wait behind the open transaction.
    if (OPEN.includes(peek.state)) await this.assertInstallable(peek, principal);
    return this.ds.transaction(async (m): Promise<ApplyResult> => {
      const row = await this.find(m, principal, id, true);
      if (OPEN.includes(row.state) && row.artifactRef !== peek.artifactRef) {
        throw new ConflictError('proposal_changed', 'The proposal was revised while it was being applied; apply it again.');
      }
      if (row.state === 'applied') {
        // Re-applying is idempotent: the same stored bytes, the same ref, nothing re-installed.
        return { status: 'applied', installedArtifactRef: row.installedArtifactRef as string, approvalId: row.approvalId, proposal: toProposalView(row) };
      }
      if (!OPEN.includes(row.state)) {
        throw new ConflictError('invalid_proposal_state', `A ${row.state} proposal cannot be applied.`, { state: row.state });
      }
      const artifact = JSON.parse(row.artifactBytes) as Record<string, unknown>;
      if (this.settings.activation === 'direct-rbac') {
        await this.install(m, row, artifact, principal, null, needed);
        return { status: 'applied', installedArtifactRef: row.installedArtifactRef as string, approvalId: null, proposal: toProposalView(row) };
      }
      if (row.pendingApprovalId) {
        const open = await this.approvals.stateOf(row.pendingApprovalId, { manager: m });
        if (open?.state === 'pending') return { status: 'pending-approval', pendingApprovalId: row.pendingApprovalId, proposal: toProposalView(row) };
      }
      const gate = await this.approvals.open(
        m,
        {
          subjectKind: 'proposal',
          subjectId: row.id,
          tenant: row.tenant,
          workspaceKey: row.workspaceKey,
          artifactRef: row.artifactRef,
          artifactType: row.kind,
          title: row.title ?? `${row.kind} proposal`,
        },
        principal,
      );
      row.pendingApprovalId = gate.id;
      await m.getRepository(ProposalEntity).save(row);
      return { status: 'pending-approval', pendingApprovalId: gate.id, proposal: toProposalView(row) };
    });
  }

  /** `draft | revised → rejected`. */
  async reject(principal: Principal, id: string, note?: string): Promise<ProposalView> {
    return this.ds.transaction(async (m) => {
      const row = await this.find(m, principal, id, true);
      if (!OPEN.includes(row.state)) {
        throw new ConflictError('invalid_proposal_state', `A ${row.state} proposal cannot be rejected.`, { state: row.state });
      }
      await this.withdrawGate(m, row, principal, note ? `proposal rejected: ${note}` : 'proposal rejected');
      row.state = 'rejected';
      return toProposalView(await m.getRepository(ProposalEntity).save(row));
    });
  }

  /** any state → `archived` (soft delete; an applied artifact stays installed: uninstall it through its own path). */
  async archive(principal: Principal, id: string): Promise<ProposalView> {
    return this.ds.transaction(async (m) => {
      const row = await this.find(m, principal, id, true);
      if (row.state === 'archived') return toProposalView(row);
      await this.withdrawGate(m, row, principal, 'proposal archived');
      row.state = 'archived';
      return toProposalView(await m.getRepository(ProposalEntity).save(row));
    });
  }

  /**
   * Refuses a proposal's artifact that this host cannot install (422 `validation_error`: no installer, or malformed)
   * or could not run (422 `workflow_invalid`: unknown node types, tools its catalog lacks, a broken DAG).
   * Never inside a transaction: the run checks read the tool catalog on connections of their own.
   */
  private async assertInstallable(row: ProposalEntity, principal: Principal): Promise<void> {
    const artifact = JSON.parse(row.artifactBytes) as Record<string, unknown>;
    const registryKind = REGISTRY_KIND[row.kind as ProposalKind];
    if (!this.registry.hasKind(registryKind)) {
      throw new UnprocessableError('validation_error', `This host cannot install "${row.kind}" artifacts.`, { kind: row.kind });
    }
    const violations = await this.registry.validate(registryKind, artifact);
    if (violations.length) {
      throw new UnprocessableError('validation_error', `The artifact is malformed for kind "${row.kind}".`, { kind: row.kind, violations });
    }
    await this.checks.assertInstallable(registryKind, artifact, installerOf(row, principal));
  }

  /** The scopes a proposal's artifact will act with once installed (none for kinds that never act). */
  private async authorityOf(row: ProposalEntity): Promise<string[]> {
    const registryKind = REGISTRY_KIND[row.kind as ProposalKind];
    if (!this.registry.hasKind(registryKind)) return [];
    const scope = scopeOf(row);
    return this.registry.requiredScopes(registryKind, JSON.parse(row.artifactBytes) as Record<string, unknown>, { ...scope, principal: row.principal ?? 'system' });
  }

  /** What the approver who releases a proposal's gate delegates: what its artifact will act with. */
  private async gateAuthority(gate: ApprovalEntity): Promise<string[]> {
    const row = await this.ds.getRepository(ProposalEntity).findOneBy({ id: gate.subjectId, tenant: gate.tenant });
    return row ? this.authorityOf(row) : [];
  }

  /**
   * Checked again as the approver releases it, before the deciding transaction: the host (its executors, the
   * catalog) may have changed since the proposal was applied. A proposal no longer waiting for this gate is left
   * to `release`, which refuses it.
   */
  private async beforeRelease(gate: ApprovalEntity, principal: Principal): Promise<void> {
    const row = await this.ds.getRepository(ProposalEntity).findOneBy({ id: gate.subjectId, tenant: gate.tenant });
    if (row && OPEN.includes(row.state) && row.pendingApprovalId === gate.id && row.artifactRef === gate.artifactRef) await this.assertInstallable(row, principal);
  }

  /** Called when an approval gate for a proposal is granted (inside the deciding transaction). */
  private async release(m: EntityManager, gate: ApprovalEntity, principal: Principal, needed: readonly string[], checked: boolean): Promise<void> {
    const row = await m.getRepository(ProposalEntity).createQueryBuilder('p').setLock('pessimistic_write').where('p.id = :id AND p.tenant = :t', { id: gate.subjectId, t: gate.tenant }).getOne();
    if (!row || !OPEN.includes(row.state) || row.pendingApprovalId !== gate.id) {
      throw new ConflictError('approval_subject_changed', 'The proposal is no longer waiting for this approval.');
    }
    if (row.artifactRef !== gate.artifactRef) {
      throw new ConflictError('approval_subject_changed', 'The proposal was revised after this approval was requested.');
    }
    const artifact = JSON.parse(row.artifactBytes) as Record<string, unknown>;
    // Checked by `beforeRelease` unless another approver's vote completed the quorum meanwhile: then here (the
    // gate pins the bytes, so what was checked is what is installed).
    if (!checked) await this.checks.assertInstallable(REGISTRY_KIND[row.kind as ProposalKind], artifact, installerOf(row, principal), m);
    await this.install(m, row, artifact, principal, gate.id, needed);
  }

  private async install(m: EntityManager, row: ProposalEntity, artifact: Record<string, unknown>, principal: Principal, approvalId: string | null, needed: readonly string[]): Promise<void> {
    const kind = row.kind as ProposalKind;
    // The stored bytes themselves are installed (and hashed): no re-serialization in between.
    const { artifact: installed } = await this.registry.install(
      REGISTRY_KIND[kind],
      artifact,
      { tenant: row.tenant, workspace: row.workspaceKey || undefined, principal: principal.principal, delegation: delegationOf(principal, needed) },
      `proposal:${row.id}`,
      m,
      row.artifactBytes,
    );
    row.state = 'applied';
    row.installedArtifactRef = installed.ref;
    row.approvalId = approvalId;
    row.pendingApprovalId = null;
    await m.getRepository(ProposalEntity).save(row);
    await this.events.append(
      scopeOf(row),
      HOST_STREAM,
      'proposal.activated',
      { proposalId: row.id, kind, approvalId, installedArtifactRef: installed.ref },
      { manager: m, correlationId: row.id },
    );
    await this.audit.record(m, {
      tenant: row.tenant, workspace: row.workspaceKey || undefined, actor: auditActor(principal), action: 'proposal.applied', resource: { type: 'proposal', id: row.id },
      details: { kind, approvalId, installedArtifactRef: installed.ref, grantedScopes: [...needed] },
    });
  }

  private async withdrawGate(m: EntityManager, row: ProposalEntity, principal: Principal, reason: string): Promise<void> {
    if (!row.pendingApprovalId) return;
    await this.approvals.cancel(m, row.pendingApprovalId, principal, reason);
    row.pendingApprovalId = null;
  }

  /**
   * `duplicateOf`: the ref of an installed artifact this one restates (same bytes) or would replace
   * (same registry name), else `proposal:<id>` of another open proposal with the same bytes, else null.
   */
  private async detectDuplicate(m: EntityManager, scope: TenantScope, kind: ProposalKind, artifact: Record<string, unknown>, ref: string, excludeId?: string): Promise<string | null> {
    const registryKind = REGISTRY_KIND[kind];
    if (this.registry.hasKind(registryKind)) {
      const installed = await this.registry.list(scope, [registryKind], m);
      const same = installed.find((a) => a.ref === ref);
      if (same) return same.ref;
      const name = registryName(kind, artifact);
      const overlapping = name ? installed.find((a) => a.name === name && (a.workspace ?? '') === (scope.workspace ?? '')) : undefined;
      if (overlapping) return overlapping.ref;
    }
    const qb = m
      .getRepository(ProposalEntity)
      .createQueryBuilder('p')
      .select(['p.id'])
      .where('p.tenant = :t AND p.workspace_key = :w AND p.artifact_ref = :r AND p.state IN (:...s)', { t: scope.tenant, w: scope.workspace ?? '', r: ref, s: OPEN });
    if (excludeId) qb.andWhere('p.id <> :id', { id: excludeId });
    const other = await qb.orderBy('p.created_at', 'ASC').getOne();
    return other ? `proposal:${other.id}` : null;
  }

  private async find(m: EntityManager, scope: TenantScope, id: string, lock: boolean): Promise<ProposalEntity> {
    // Not a UUID, another tenant's or another workspace's: all the same 404.
    if (!UUID.test(id)) throw new NotFoundError('No such proposal.');
    const qb = scopedQuery(m.getRepository(ProposalEntity).createQueryBuilder('p').where('p.id = :id', { id }), scope, 'workspace_key');
    if (lock) qb.setLock('pessimistic_write');
    const row = await qb.getOne();
    if (!row) throw new NotFoundError('No such proposal.');
    return row;
  }
}

function scopeOf(row: ProposalEntity): TenantScope {
  return { tenant: row.tenant, workspace: row.workspaceKey || undefined };
}

/**
 * The text to store for an artifact: the submitted text when it is the JSON of exactly this value
 * (it is the span of the parsed request body), else `JSON.stringify` of the value.
 */
function storedText(artifact: Record<string, unknown>, text: string | undefined): string {
  if (text === undefined) return artifactText(artifact);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new ValidationError('artifact must be a JSON object.', { path: '/artifact' });
  }
  if (!isPlainObject(parsed) || !isDeepStrictEqual(parsed, artifact)) throw new ValidationError('artifact text does not match the artifact.', { path: '/artifact' });
  return text;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The registry name an artifact would be installed under (mirrors each kind's installer `identify`). */
function registryName(kind: ProposalKind, artifact: Record<string, unknown>): string | undefined {
  const n = kind === 'prompt-template' ? artifact.templateId : artifact.name;
  return typeof n === 'string' ? n : undefined;
}

/** Who installs a proposal's artifact: the principal applying it (or releasing its gate), in the proposal's scope. */
function installerOf(row: ProposalEntity, principal: Principal) {
  return { tenant: row.tenant, workspace: row.workspaceKey || undefined, principal: principal.principal, scopes: principal.scopes };
}
