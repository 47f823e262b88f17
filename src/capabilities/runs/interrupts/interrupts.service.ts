import { Inject, Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { ConflictError, DomainError, NotFoundError, UnprocessableError, ValidationError } from '../../../platform/errors/domain-error';
import { UUID } from '../../../platform/ids';
import { AuthorSchemas, AuthorValidator, SchemaNotCompiled } from '../../../platform/schemas/author-schemas';
import type { Principal, TenantScope } from '../../../platform/identity/principal';
import { ApprovalsService, type ApprovalEntity, type ApprovalView } from '../../approvals';
import { OAuthService } from '../../connections';
import { RUN_GATE_SUBJECT, WAITING_STATUSES } from '../engine/run-engine.service';
import { RUNS_SETTINGS, RunsSettings } from '../runs.settings';
import { tokenResumeValue } from './interrupts.dto';
import { InterruptTokenService } from './interrupt-tokens.service';
import { scopeCondition } from '../../../platform/tenancy/workspace-scope';

/** The `interrupt` of a suspended run's snapshot. */
export interface InterruptView {
  interruptId: string;
  kind: string;
  nodeId: string;
  key: string;
  title: string;
  requestedAt: string;
  expiresAt: string;
  timeoutMs: number;
  resumeSchema?: Record<string, unknown>;
  data?: Record<string, unknown>;
  /** An approval's quorum: how many accepts release it, the rejection policy, and the votes so far. */
  quorum?: { requiredApprovals: number; rejectionPolicy: string; accepted: number; rejected: number; votes: Array<{ voter: string; action: 'accept' | 'reject'; decidedAt: string }> };
  /** An external event's signed token and the route that takes it. */
  interruptToken?: string;
  callbackUrl?: string;
  tokenExpiresAt?: string;
}

export interface ResolveAnswer {
  runId: string;
  nodeId: string;
  interruptId: string;
  /** The run's status after the resolution (still `waiting-approval` while a quorum is not met). */
  status: string;
  /** The interrupt: `resolved`, `rejected`, or `pending` (a vote that did not close it). */
  interruptState: 'pending' | 'resolved' | 'rejected';
}

const INTERRUPT_NOT_FOUND = () => new DomainError('interrupt_not_found', 404, 'No such pending interrupt.');
/** A run step whose interrupt was resolved, rejected, expired or cancelled with its run (errors.md §One code per state). */
const ALREADY_RESOLVED = (state: string) => new ConflictError('interrupt_already_resolved', `The interrupt is ${state}.`, { state });

/**
 * Interrupts of run steps (interrupt.md): the same store as the RFC 0051 approval gates (a gate per
 * suspended node, with a kind, a resume schema and data). Resolution goes through the gate's
 * decision path, so quorum, the one-winner rule and the run's release are the approval gates' own:
 * by run (`POST /v1/runs/{runId}/interrupts/{nodeId}`, a credential holding `approvals:respond`) or,
 * for an external event, by the signed token of `GET`/`POST /v1/interrupts/{token}`.
 */
@Injectable()
export class InterruptsService {
  private readonly schemas = AuthorSchemas.shared();

  constructor(
    private readonly ds: DataSource,
    private readonly approvals: ApprovalsService,
    private readonly tokens: InterruptTokenService,
    @Inject(RUNS_SETTINGS) private readonly settings: RunsSettings,
    private readonly oauth: OAuthService,
  ) {}

  /**
   * Whether the credential a `credential` interrupt waits on now resolves for the run's starter (who
   * opened the gate): the host's own re-check (RFC 0199 §C.4), never the caller's word.
   */
  async credentialResolves(gate: Pick<ApprovalEntity, 'tenant' | 'requestedBy' | 'data'>): Promise<boolean> {
    const data = (gate.data ?? {}) as { provider?: unknown; scopes?: unknown };
    if (typeof data.provider !== 'string') return false;
    const scopes = Array.isArray(data.scopes) ? data.scopes.filter((s): s is string => typeof s === 'string') : [];
    return (await this.oauth.credentialStatus({ tenant: gate.tenant, principal: gate.requestedBy }, data.provider, scopes)).status === 'ok';
  }

  /** The interrupt a waiting run's snapshot shows: the gate of its current node (else its oldest pending one). */
  async forSnapshot(run: { id: string; tenant: string; status: string; currentNodeId: string | null }, major = 1): Promise<InterruptView | undefined> {
    if (!WAITING_STATUSES.includes(run.status)) return undefined;
    const pending = await this.approvals.pendingOfRun(run.tenant, run.id);
    const gate = pending.find((g) => g.nodeId === run.currentNodeId) ?? pending[0];
    return gate ? this.view(gate, major) : undefined;
  }

  /** `major`: the protocol major the view is read under (its token scheme and callback route). */
  private async view(g: ApprovalView, major = 1): Promise<InterruptView> {
    const requestedAt = g.createdAt;
    const v: InterruptView = {
      interruptId: g.id,
      kind: g.kind,
      nodeId: g.nodeId ?? '',
      key: `${RUN_GATE_SUBJECT}:${g.runId}:${g.id}`,
      title: g.title,
      requestedAt,
      expiresAt: g.expiresAt,
      timeoutMs: Math.max(0, Date.parse(g.expiresAt) - Date.parse(requestedAt)),
    };
    if (g.resumeSchema) v.resumeSchema = g.resumeSchema;
    if (g.data) v.data = g.data;
    if (g.kind === 'approval') {
      v.quorum = {
        requiredApprovals: g.quorum,
        rejectionPolicy: g.rejectionPolicy,
        accepted: g.granted,
        rejected: g.denied,
        votes: g.decisions.map((d) => ({ voter: d.principal, action: d.decision === 'granted' ? 'accept' : 'reject', decidedAt: d.decidedAt })),
      };
    }
    if (g.kind === 'external-event' && g.runId && g.nodeId) {
      const expiresAt = this.tokenExpiry(g.createdAt, g.expiresAt);
      v.interruptToken = await this.tokens.sign({ runId: g.runId, nodeId: g.nodeId, interruptId: g.id, expiresAt, intent: 'resolve' }, major);
      v.callbackUrl = major === 2 ? `/interrupts/${v.interruptToken}` : `/v1/interrupts/${v.interruptToken}`;
      v.tokenExpiresAt = expiresAt;
    }
    return v;
  }

  /** A token lives `tokenTtlMs` from the interrupt's request, never past the interrupt's own deadline. */
  private tokenExpiry(createdAt: string, gateExpiresAt: string): string {
    return new Date(Math.min(Date.parse(createdAt) + this.settings.interrupts.tokenTtlMs, Date.parse(gateExpiresAt))).toISOString();
  }

  /** `major`: the protocol major of the request (a closed interrupt answers differently per major). */
  async resolveByRun(p: Principal, runId: string, nodeId: string, resumeValue: unknown, major = 1): Promise<ResolveAnswer> {
    if (!(await this.runOf(p, runId))) throw new NotFoundError('No such run.');
    const gate = await this.approvals.pendingOfRunNode(p, runId, nodeId);
    if (!gate) throw await this.noPendingGate(p, runId, nodeId, major);
    return this.resolve(p, gate, resumeValue, false);
  }

  /**
   * No pending gate at a run step. Major 2 (errors.md §One code per state): 409
   * interrupt_already_resolved when the step had one (resolved, rejected, expired or cancelled with
   * its run), 404 when it never had. Major 1: the interrupt is gone, 404.
   */
  private async noPendingGate(p: Principal, runId: string, nodeId: string, major: number): Promise<DomainError> {
    const closed = major === 2 ? await this.approvals.latestOfRunNode(p, runId, nodeId) : undefined;
    return closed ? ALREADY_RESOLVED(closed.state) : INTERRUPT_NOT_FOUND();
  }

  /** The approval-gate form of the run-scoped route: `{action, voter?, feedback?}` is the resume value. */
  async decideByRun(p: Principal, runId: string, nodeId: string, body: Record<string, unknown>, major = 1): Promise<ResolveAnswer> {
    if (!(await this.runOf(p, runId))) throw new NotFoundError('No such run.');
    const gate = await this.approvals.pendingOfRunNode(p, runId, nodeId);
    if (!gate) throw await this.noPendingGate(p, runId, nodeId, major);
    if (gate.kind !== 'approval') throw INTERRUPT_NOT_FOUND();
    return this.resolve(p, gate, body, false);
  }

  /** POST /v1/approvals/{id}/resolve: resolve a gate of the caller's tenant by its id (the approvals list's item). */
  async resolveById(p: Principal, id: string, resumeValue: unknown): Promise<ResolveAnswer> {
    const view = await this.approvals.get(p, id); // 404 unknown / foreign
    const gate = await this.approvals.byIdUnscoped(view.id);
    if (!gate || gate.subjectKind !== RUN_GATE_SUBJECT || !gate.runId) throw new UnprocessableError('not_a_run_interrupt', 'Only the gate of a run step is resolved with a value; grant or deny this one.');
    if (gate.state !== 'pending') throw new ConflictError('interrupt_already_resolved', `The interrupt is ${gate.state}.`, { state: gate.state });
    return this.resolve(p, gate, resumeValue, false);
  }

  /** GET /v1/interrupts/{token}: the pending interrupt as its InterruptPayload (suspend-request.schema.json). */
  async inspect(token: string): Promise<Record<string, unknown>> {
    const gate = await this.gateOfToken(token);
    const v = await this.view(await this.approvals.viewOf(gate));
    return { kind: v.kind, key: v.key, ...(v.resumeSchema ? { resumeSchema: v.resumeSchema } : {}), timeoutMs: v.timeoutMs, data: v.data ?? {} };
  }

  /**
   * `POST /v1/interrupts/{token}` as a transport receives it (REST, gRPC ResolveInterruptByToken):
   * the token first, so an unknown, forged or spent token is answered the same whatever the body;
   * then the body `{resumeValue}`.
   */
  async resolveByTokenRequest(token: string, body: unknown, major = 1): Promise<ResolveAnswer> {
    await this.inspect(token);
    const answer = await this.resolveByToken(token, tokenResumeValue(body));
    if (major !== 2) return answer;
    // No caller names a tenant on this route: under major 2 the ids are bound to the interrupt's own (identity.md §5).
    const gate = await this.approvals.byIdUnscoped(answer.interruptId);
    return gate ? { ...answer, runId: `${gate.tenant}/${answer.runId}`, interruptId: `${gate.tenant}/${answer.interruptId}` } : answer;
  }

  /** POST /v1/interrupts/{token}: the token is the authority (no credential); single use. */
  async resolveByToken(token: string, resumeValue: unknown): Promise<ResolveAnswer> {
    const gate = await this.gateOfToken(token);
    const principal: Principal = { tenant: gate.tenant, workspace: gate.workspaceKey || undefined, principal: `token:${gate.id}`, scopes: new Set(), kind: 'system' };
    return this.resolve(principal, gate, resumeValue, true);
  }

  private async gateOfToken(token: string): Promise<ApprovalEntity> {
    const check = await this.tokens.verify(token);
    if (!check.ok && check.reason === 'malformed') throw new ValidationError('The interrupt token is malformed.', { field: 'token' });
    if (!check.ok && check.reason === 'invalid') throw INTERRUPT_NOT_FOUND();
    // A v2 token under an algorithm or kid this host does not hold, or whose MAC fails (identity.md §4).
    if (!check.ok && check.reason === 'unverifiable') throw new DomainError('interrupt_token_invalid', 401, 'The interrupt token is not verifiable by this host.');
    if (!check.ok) throw new DomainError('interrupt_expired', 410, 'The interrupt token expired.');
    const { payload } = check;
    const gate = await this.approvals.byIdUnscoped(payload.interruptId);
    // Tokens are minted for external events only: any other gate is not reachable by token.
    if (!gate || gate.runId !== payload.runId || gate.nodeId !== payload.nodeId || gate.kind !== 'external-event') throw INTERRUPT_NOT_FOUND();
    if (gate.state !== 'pending') throw new ConflictError('interrupt_already_resolved', `The interrupt is ${gate.state}; its token is no longer valid.`, { state: gate.state });
    return gate;
  }

  /**
   * The gate's resume schema, compiled (patterns on the linear-time engine). One stored that does
   * not compile (the install checks refuse such schemas, so it was written some other way) is the
   * workflow's fault, not the answer's: 422, and the run can be cancelled.
   */
  private validator(schema: Record<string, unknown>): AuthorValidator {
    try {
      return this.schemas.compile(schema);
    } catch (e) {
      if (!(e instanceof SchemaNotCompiled)) throw e;
      throw new UnprocessableError('resume_schema_invalid', 'The interrupt’s resumeSchema is not a JSON Schema this host can check, so no value resolves it; cancel the run.', {
        problems: e.problems.map((p) => ({ path: `/resumeSchema${p.path}`, message: p.message })),
      });
    }
  }

  private async resolve(p: Principal, gate: ApprovalEntity, resumeValue: unknown, viaToken: boolean): Promise<ResolveAnswer> {
    if (gate.resumeSchema) {
      const violations = this.validator(gate.resumeSchema)(resumeValue);
      if (violations.length) {
        throw new ValidationError('resumeValue does not satisfy the interrupt’s resumeSchema.', {
          field: 'resumeValue',
          problems: violations.slice(0, 20).map((v) => ({ path: `/resumeValue${v.path}`, message: v.message })),
        });
      }
    }
    if (gate.kind === 'credential' && (resumeValue as { outcome?: unknown }).outcome === 'authorized' && !(await this.credentialResolves(gate))) {
      throw new ValidationError('No credential resolves yet for the run’s starter, provider and scopes: it authorizes the connection at the interrupt’s connectUrl, which resolves the interrupt.', { field: 'resumeValue' });
    }
    if (gate.kind === 'external-event') {
      const correlation = (gate.data?.correlation ?? {}) as Record<string, unknown>;
      const value = (resumeValue ?? {}) as Record<string, unknown>;
      const mismatched = Object.keys(correlation).filter((k) => JSON.stringify(value[k]) !== JSON.stringify(correlation[k]));
      if (typeof resumeValue !== 'object' || resumeValue === null || mismatched.length) {
        throw new UnprocessableError('correlation_mismatch', 'The event does not match the interrupt’s correlation.', { fields: mismatched });
      }
    }
    let decision: 'granted' | 'denied' = 'granted';
    let voter: string | undefined;
    let reason: string | undefined;
    let value = resumeValue;
    if (gate.kind === 'approval') {
      const a = resumeValue as { action?: string; voter?: string; feedback?: string };
      if (a?.action !== 'accept' && a?.action !== 'reject') throw new ValidationError('resumeValue.action must be accept or reject.', { field: 'resumeValue.action' });
      decision = a.action === 'accept' ? 'granted' : 'denied';
      // Another voter than the caller is acting-as, checked (and compared canonically) by the gate's decision.
      voter = typeof a.voter === 'string' && a.voter ? a.voter : undefined;
      reason = typeof a.feedback === 'string' && a.feedback ? a.feedback : undefined;
      value = { action: a.action, ...(reason ? { feedback: reason } : {}), decidedBy: voter?.normalize('NFKC').trim() || p.principal, decidedAt: new Date().toISOString() };
    }
    let after: ApprovalView;
    try {
      after = await this.approvals.vote(p, gate.id, decision, { voter, reason, resumeValue: value, viaToken });
    } catch (e) {
      // A cancel (or another resolve) won: the gate closed before this decision.
      if (e instanceof ConflictError && e.code === 'approval_closed') throw new ConflictError('interrupt_already_resolved', 'The interrupt was resolved or its run cancelled first.', e.details);
      if (e instanceof NotFoundError) throw INTERRUPT_NOT_FOUND();
      throw e;
    }
    const [run] = (await this.ds.query(`SELECT "status" FROM "run" WHERE "id" = $1`, [gate.runId])) as Array<{ status: string }>;
    return {
      runId: gate.runId ?? gate.subjectId,
      nodeId: gate.nodeId ?? '',
      interruptId: gate.id,
      status: run?.status ?? 'unknown',
      interruptState: after.state === 'pending' ? 'pending' : after.state === 'granted' ? 'resolved' : 'rejected',
    };
  }

  private async runOf(scope: TenantScope, runId: string): Promise<boolean> {
    if (!UUID.test(runId)) return false;
    const params: unknown[] = [runId];
    const sql = `SELECT 1 FROM "run" WHERE "id" = $1 AND ${scopeCondition(scope, params)} AND "kind" = 'workflow'`;
    return ((await this.ds.query(sql, params)) as unknown[]).length > 0;
  }
}
