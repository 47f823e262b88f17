import { createHash } from 'node:crypto';
import { newRunId } from './engine/run-id';
import { Inject, Injectable } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { canonicalJson } from '../../platform/artifacts/artifact-registry.service';
import { ConflictError, DomainError, ForbiddenError, NotFoundError, UnprocessableError, ValidationError } from '../../platform/errors/domain-error';
import { EventLogService } from '../../platform/events/event-log.service';
import { RunEntity } from './run.entity';
import { principalRef } from './run-principal.entity';
import { RUN_CREATE_SCOPE } from '../../platform/run-ports/run-launcher';
import { checkIdempotencyKey, IDEMPOTENCY_ACK_TIMEOUT_SEC, inFlight } from '../../platform/idempotency/idempotency-store.service';
import type { Principal, TenantScope } from '../../platform/identity/principal';
import { subjectOf } from '../../platform/identity/subject';
import { currentTraceContext } from '../../platform/tracing/trace-context';
import { formatTraceparent } from '../../platform/tracing/tracing';
import { InterruptCallbacks } from './interrupts/interrupt-callbacks.service';
import { InterruptsService } from './interrupts/interrupts.service';
import { NodeExecutorRegistry } from './engine/node-executor-registry.service';
import { RunEngineService } from './engine/run-engine.service';
import { createdSnapshot, readRunSnapshot, RunSnapshot } from './run-snapshot';
import { RunMetrics } from './runs.metrics';
import { RUNS_SETTINGS, RunsSettings } from './runs.settings';
import { parseDefinition, WorkflowDefinition } from './workflow-definition';
import { WorkflowResolver } from './workflow-resolver.service';
import { insertPendingRun, RunInsertValues } from './engine/run-insert';
import { insertAndStart } from './engine/run-insert-start';
import { RunInsertBatches } from './engine/run-insert-batcher';
import type { SlotReservation } from './engine/run-claimer';
import type { ClaimedRow } from './engine/run-store';
import { InvariantViolation } from '../../platform/errors/internal-fault';
import { checkDeferredOverrides, checkRunInputs } from './run-inputs';
import { refuseAtCapacity } from './run-admission';
import { budgetPolicyProblems } from './engine/run-budget';

export interface CreateRunRequest {
  workflowId: string;
  inputs?: Record<string, unknown>;
  configurable?: Record<string, unknown>;
  tags?: string[];
  metadata?: Record<string, unknown>;
  tenantId?: string;
  /** Opaque correlation id; with `X-Dedup: enforce`, at most one active run per scope. */
  scopeId?: string;
  /** The signed-token HITL callback URL (interrupt.md); kept with the run. */
  callbackUrl?: string;
  /** RFC 0129 data-residency constraint (this host advertises no `dataResidency`: refused). */
  residency?: Record<string, unknown>;
  /** RFC 0081 eval-suite projection (this host advertises no `agents.evalSuite`: 501). */
  mode?: string;
  evalSuiteRef?: string;
  agentId?: string;
}

/** Transport-level options of a create: headers that are not part of the idempotent body. */
export interface CreateRunOptions {
  /** `X-Dedup: enforce`: refuse while a run of the same `scopeId` is active (409 run_already_active). */
  dedup?: boolean;
  /** The transport the run was started through when not REST (`run.started.transport`): the MCP mount says `mcp`. */
  transport?: 'mcp';
  /** `untrusted`: the run's inputs came from outside the host's trust (an MCP client's arguments), kept with the run. */
  trustBoundary?: 'untrusted';
}

/**
 * The prefix of the idempotency keys the host mints for its own launches. A caller's key is 1-255
 * visible ASCII characters (no space), so a key starting with "host " can never be sent by a caller:
 * no `Idempotency-Key` can take, replay or pre-empt a host-started run (migration 1764920000001
 * moved the earlier host keys into it).
 */
export const HOST_KEY_PREFIX = 'host ';

/** The statuses a run of a scope is active in (the `X-Dedup` claim holds while the run is in one). */
const ACTIVE = ['pending', 'running', 'paused', 'waiting-approval', 'waiting-input', 'waiting-external', 'cancelling'];

/**
 * Creating a run (`POST /v1/runs`, host launches, child runs): idempotent, planned against the
 * tenant's installed chains, inserted (and claimed) in one statement, RFC 0058 bounds checked; a
 * background starter's refusal is recorded as a failed run.
 */
@Injectable()
export class RunCreationService {
  /** Concurrent creates' inserts leave together, one statement for many runs (group commit). */
  private readonly batches: RunInsertBatches;

  constructor(
    private readonly ds: DataSource,
    private readonly resolver: WorkflowResolver,
    private readonly executors: NodeExecutorRegistry,
    private readonly engine: RunEngineService,
    private readonly events: EventLogService,
    private readonly metrics: RunMetrics,
    private readonly interrupts: InterruptsService,
    @Inject(RUNS_SETTINGS) private readonly settings: RunsSettings,
    private readonly callbacks: InterruptCallbacks,
  ) {
    this.batches = new RunInsertBatches(ds, settings.insertBatching);
  }

  /**
   * Creates a run of a chain installed for the caller's tenant and starts it on this replica. With an
   * `Idempotency-Key`, the same key and the same body answer the same run; the same key with another
   * body is 409 `idempotency_key_mismatch`.
   */
  async create(
    principal: Principal,
    req: CreateRunRequest,
    idempotencyKey?: string,
    parentRunId?: string,
    manager?: EntityManager,
    opts: { recordRefusal?: boolean; requireCreateScope?: boolean; hostKey?: boolean; child?: { nodeId?: string; variables?: Record<string, unknown> } } & CreateRunOptions = {},
  ): Promise<{ snapshot: RunSnapshot; replayed: boolean }> {
    const db = manager ?? this.ds.manager;
    // Runs started on someone's behalf (standing work, child runs) need the scope a caller of POST /v1/runs needs.
    if (opts.requireCreateScope && !principal.scopes.has(RUN_CREATE_SCOPE)) {
      const refusal = new ForbiddenError(`Starting this run needs ${RUN_CREATE_SCOPE}, which the principal it acts for does not hold.`, { requiredScopes: [RUN_CREATE_SCOPE], missingScopes: [RUN_CREATE_SCOPE] });
      if (!opts.recordRefusal) throw refusal;
      const requestHash = createHash('sha256').update(canonicalJson({ ...req, tenantId: undefined })).digest('hex');
      if (idempotencyKey) {
        const prior = await this.byIdempotencyKey(principal, idempotencyKey, db);
        if (prior) return this.replay(principal, prior, requestHash, db);
      }
      return this.recordRefused(principal, req, refusal, idempotencyKey, requestHash, manager);
    }
    if (!opts.hostKey) checkIdempotencyKey(idempotencyKey);
    if (req.tenantId !== undefined && req.tenantId !== principal.tenant) throw new ForbiddenError('tenantId does not match the credential.', { field: 'tenantId' });
    refuseGated(req);
    if (opts.dedup && !req.scopeId) throw new ValidationError('X-Dedup: enforce needs a scopeId in the body.', { header: 'X-Dedup', field: 'scopeId' });
    const configurable = this.resolveBounds(req.configurable ?? {});
    // Compared only with the run of the same Idempotency-Key: without a key nothing reads it.
    const requestHash = idempotencyKey !== undefined ? createHash('sha256').update(canonicalJson({ ...req, tenantId: undefined })).digest('hex') : '';
    // At the tenant's in-flight cap a caller's new run is refused (503) before anything is planned; a key already answered replays.
    if (this.settings.admission.inflightCap > 0 && !opts.hostKey && !parentRunId) {
      const prior = idempotencyKey ? await this.byIdempotencyKey(principal, idempotencyKey, db) : undefined;
      if (prior) return this.replay(principal, prior, requestHash, db);
      await refuseAtCapacity(db, principal, this.settings.admission);
    }
    // With X-Dedup the key is looked up first: the active run of the scope may be the key's own.
    if (idempotencyKey && opts.dedup) {
      const prior = await this.byIdempotencyKey(principal, idempotencyKey, db);
      if (prior) return this.replay(principal, prior, requestHash, db);
    }
    const metadata: Record<string, unknown> = {};
    if (req.tags) metadata.tags = req.tags;
    if (req.metadata) metadata.metadata = req.metadata;
    if (parentRunId) metadata.parentRunId = parentRunId;
    // A child run's linkage and its one-shot variable seeds (run-variables.ts), kept with its row.
    if (parentRunId && opts.child?.nodeId) metadata.parentNodeId = opts.child.nodeId;
    if (opts.child?.variables && Object.keys(opts.child.variables).length) metadata.variables = opts.child.variables;
    // Interrupt notifications are delivered there (InterruptCallbacks): what the egress guard refuses is refused now.
    if (req.callbackUrl !== undefined) metadata.callbackUrl = await this.callbacks.checkUrl(req.callbackUrl);
    if (opts.transport) metadata.transport = opts.transport;
    if (opts.trustBoundary) metadata.trustBoundary = opts.trustBoundary;
    // Who created the run, through which credential lane: its v2 owner.subject (identity.md §1).
    metadata.subject = subjectOf(principal, this.settings.jwtIssuer);
    const trace = currentTraceContext();
    let dedupChecked = false;
    // A run is inserted only while the tenant's chains are those it was planned from (the insert
    // checks their version): another replica's install or uninstall in between is planned again.
    for (let attempt = 0; ; attempt++) {
      let planned: { definition: WorkflowDefinition; version: string };
      try {
        planned = checkDeferredOverrides(await this.plan(principal, req, db, attempt > 0), configurable);
      } catch (e) {
        // A key already answered is answered again, whatever became of its chain since.
        if (idempotencyKey && !opts.dedup) {
          const prior = await this.byIdempotencyKey(principal, idempotencyKey, db);
          if (prior) return this.replay(principal, prior, requestHash, db);
        }
        if (!opts.recordRefusal || !(e instanceof DomainError)) throw e;
        return this.recordRefused(principal, req, e, idempotencyKey, requestHash, manager);
      }
      if (opts.dedup && !dedupChecked) {
        await this.refuseActiveScope(principal, req.scopeId!, db);
        dedupChecked = true;
      }
      const runId = newRunId();
      const definitionText = JSON.stringify(planned.definition);
      const inputs = req.inputs ?? {};
      // The answer is the run as created (pending), built from what is inserted, not read back; a
      // keyed create stores it with the row, so a replay answers it again.
      const snapshot = createdSnapshot(runId, principal, req.workflowId, inputs, configurable, metadata);
      const values: RunInsertValues = {
        tenant: principal.tenant,
        workspace: principal.workspace ?? null,
        principal: principal.principal,
        metadata,
        workflowId: req.workflowId,
        definitionText,
        inputs,
        configurable,
        scopes: [...principal.scopes],
        idempotencyKey: idempotencyKey ?? null,
        requestHash: idempotencyKey !== undefined ? requestHash : null,
        scopeId: req.scopeId ?? null,
        dedupScope: opts.dedup ? req.scopeId! : null,
        // The creating request's trace (its span, while tracing is on): the run's spans join it.
        traceParent: trace ? formatTraceparent(trace) : null,
        traceState: trace?.tracestate ?? null,
        catalogVersion: planned.version,
        runId,
        createResponse: idempotencyKey !== undefined ? JSON.stringify(snapshot) : null,
      };
      // Copies, as the engine would have read them: nothing it does reaches the cached chain or the request.
      const claimed = (): ClaimedRow => ({
        id: runId,
        tenant: principal.tenant,
        workspace: principal.workspace ?? null,
        principal: principal.principal,
        status: 'pending',
        workflow_id: req.workflowId,
        definition: JSON.parse(definitionText) as WorkflowDefinition,
        inputs: JSON.parse(JSON.stringify(inputs)) as Record<string, unknown>,
        configurable: JSON.parse(JSON.stringify(configurable)) as Record<string, unknown>,
        scopes: [...principal.scopes],
        fence: 1,
        cancel_requested: false,
        node_executions: 0,
        cost_usd: 0,
        started_at: null,
        trace_parent: values.traceParent,
        trace_state: values.traceState,
        metadata: JSON.parse(JSON.stringify(metadata)) as Record<string, unknown>,
      });
      // Outside a caller's transaction the insert also claims the run for this replica when it has a
      // slot for it (lease on the database clock, fence 1), so it starts without a claim statement of
      // its own; a run left unclaimed is announced to the other replicas (and found by claim passes).
      const outcome = await insertAndStart({ ds: this.ds, engine: this.engine, executors: this.executors, batches: this.batches }, {
        values,
        definition: planned.definition,
        claimed,
        manager,
        dedup: !!opts.dedup,
        insertRow: (claim, firstAttempt) => this.insertCreated(principal, req, values, claim, db, !!manager, firstAttempt),
      });
      if (!outcome.current) {
        this.resolver.forget(principal);
        if (attempt >= 4) throw new InvariantViolation('the installed chains kept changing while the run was created');
        continue;
      }
      if (!outcome.inserted) return this.replayConcurrent(principal, idempotencyKey!, requestHash, db);
      // Inside a caller's transaction the caller starts it after its commit (RunLauncher.start).
      return { snapshot, replayed: false };
    }
  }

  /**
   * The run's insert, one statement: the row (claimed for this replica when `claim`), only while the
   * tenant's catalog version is the planned one (only as its tenant's first run in a slot of the
   * newcomers' reserve); a notification for the other replicas when it is left unclaimed. `current`
   * false: the chains moved, nothing was inserted. `inserted` false with `current`: the
   * Idempotency-Key is taken (a replay). `claimed`: this replica holds it.
   */
  private async insertCreated(principal: Principal, req: CreateRunRequest, v: RunInsertValues, claim: SlotReservation | undefined, db: EntityManager, inTransaction: boolean, firstAttempt = 0): Promise<{ current: boolean; inserted: boolean; claimed: boolean }> {
    for (let attempt = firstAttempt; ; attempt++) {
      try {
        // Outside a transaction on the pool, prepared; inside, on the caller's connection.
        const lease = claim ? { owner: this.engine.owner, leaseMs: this.settings.leaseMs, newcomer: claim.newcomer } : null;
        // Batched with other requests' inserts, except inside a transaction, with X-Dedup (its conflict
        // is an error of its own) and for a tenant's first run taking the newcomers' reserve.
        const row = inTransaction || v.dedupScope !== null || claim?.newcomer ? await insertPendingRun(inTransaction ? db : this.ds, v, lease) : await this.batches.pending.submit({ values: v, claim: lease });
        if (!row.current) return { current: false, inserted: false, claimed: false };
        if (row.id) return { current: true, inserted: true, claimed: row.claimed };
        // Without a key nothing can conflict: the row was not written. Once more, then it is an error.
        if (v.idempotencyKey !== null) return { current: true, inserted: false, claimed: false };
        if (attempt >= 1) throw new InvariantViolation('the database wrote no row for the new run');
      } catch (e) {
        // Another enforced run of the scope became active in between: the index is the claim.
        const pgErr = e as { code?: string; constraint?: string; driverError?: { code?: string; constraint?: string } };
        if ((pgErr.driverError?.code ?? pgErr.code) !== '23505' || (pgErr.driverError?.constraint ?? pgErr.constraint) !== 'run_dedup_active_uq' || inTransaction) throw e;
        await this.refuseActiveScope(principal, req.scopeId!, db);
        // That run ended before it could be named: the scope is free again, claim it once more.
        if (attempt >= 2) throw e;
      }
    }
  }

  /**
   * What a run of `req` would execute, with the catalog version it was planned at: the installed
   * chain, parsed, every node served by an executor that accepts its config. Rejects as POST
   * /v1/runs does (404 unknown workflow, 422 not executable). From the cached chains unless `fresh`;
   * a refusal is never answered from the cache (it is checked against the database first).
   */
  private async plan(principal: Principal, req: CreateRunRequest, db: EntityManager, fresh = false): Promise<{ definition: WorkflowDefinition; version: string }> {
    const hit = fresh ? undefined : this.resolver.cached(principal, req.workflowId);
    if (hit?.chain) {
      try {
        const definition = this.executable(req.workflowId, hit.chain.dag);
        checkRunInputs(hit.chain.parameters, req.inputs);
        return { definition, version: hit.version };
      } catch (e) {
        if (!(e instanceof DomainError)) throw e;
      }
    }
    const current = await this.resolver.current(principal, db);
    const chain = current.chain(req.workflowId);
    if (!chain) throw new NotFoundError(`No workflow "${req.workflowId}" is installed for your tenant.`, { workflowId: req.workflowId });
    const definition = this.executable(req.workflowId, chain.dag);
    checkRunInputs(chain.parameters, req.inputs);
    return { definition, version: current.version };
  }


  /** The chain's DAG parsed, every node served by an executor that accepts its config (else 422). */
  private executable(workflowId: string, dag: Record<string, unknown>): WorkflowDefinition {
    const { definition, problems } = parseDefinition(workflowId, dag);
    if (!definition) throw new UnprocessableError('workflow_invalid', 'The workflow cannot be executed.', { problems });
    for (const n of definition.nodes) {
      const ex = this.executors.get(n.typeId);
      if (!ex) throw new UnprocessableError('unknown_node_type', `No node executor serves "${n.typeId}".`, { offendingTypeId: n.typeId, nodeId: n.id });
      const issues = ex.provider.validateConfig?.(n.config) ?? [];
      if (issues.length) throw new UnprocessableError('workflow_invalid', `Node ${n.id} is misconfigured.`, { nodeId: n.id, problems: issues });
      if (n.compensation && !this.executors.get(n.compensation.nodeTypeId)) throw new UnprocessableError('unknown_node_type', `No node executor serves the inverse action "${n.compensation.nodeTypeId}" of node ${n.id}.`, { offendingTypeId: n.compensation.nodeTypeId, nodeId: n.id });
    }
    return definition;
  }

  /**
   * A background starter (a goal's iteration) asked for a run that cannot execute: the attempt is
   * recorded as a `failed` run carrying the refusal's code and message, with its `run.started` and
   * `run.failed` events (in the caller's transaction, else in one of its own), so it is visible,
   * counts where runs count, and is answered again for the same idempotency key instead of being
   * retried forever.
   */
  private async recordRefused(
    principal: Principal,
    req: CreateRunRequest,
    refusal: DomainError,
    idempotencyKey: string | undefined,
    requestHash: string,
    manager?: EntityManager,
  ): Promise<{ snapshot: RunSnapshot; replayed: boolean }> {
    const write = async (db: EntityManager): Promise<{ snapshot: RunSnapshot; replayed: boolean }> => {
      const error = { code: refusal.code, message: refusal.message };
      const insert = async () => (await db.query(
        `INSERT INTO "run" ("tenant", "workspace", "workspace_key", "principal", "kind", "status", "metadata", "workflow_id", "inputs", "configurable", "principal_key", "idempotency_key", "request_hash", "error", "started_at", "completed_at")
         VALUES ($1, $2, coalesce($2, ''), $3, 'workflow', 'failed', '{}'::jsonb, $4, $5::jsonb, '{}'::jsonb, ${principalRef('$1', '$10::jsonb', '$6::text[]')}, $7, $8, $9::jsonb, now(), now())
         ON CONFLICT ("tenant", "workspace_key", "idempotency_key") WHERE "idempotency_key" IS NOT NULL DO NOTHING RETURNING "id"`,
        [principal.tenant, principal.workspace ?? null, principal.principal, req.workflowId, JSON.stringify(req.inputs ?? {}), [...principal.scopes], idempotencyKey ?? null, idempotencyKey !== undefined ? requestHash : null, JSON.stringify(error), JSON.stringify(subjectOf(principal, this.settings.jwtIssuer))],
      )) as Array<{ id: string }>;
      const inserted = await this.insertRun(insert, idempotencyKey);
      if (!inserted.length) return this.replayConcurrent(principal, idempotencyKey!, requestHash, db);
      const runId = inserted[0].id;
      const owner: Record<string, string> = { tenant: principal.tenant, principal: principal.principal };
      if (principal.workspace) owner.workspace = principal.workspace;
      await this.events.appendBatch(
        { tenant: principal.tenant, workspace: principal.workspace },
        runId,
        [
          { type: 'run.started', payload: { workflowId: req.workflowId, inputs: req.inputs ?? {}, owner } },
          { type: 'run.failed', payload: { error, durationMs: 0 } },
        ],
        db,
      );
      return { snapshot: await readRunSnapshot(db, this.interrupts, principal, runId), replayed: false };
    };
    const result = manager ? await write(manager) : await this.ds.transaction(write);
    if (!result.replayed) {
      this.metrics.runFinished('failed', { runId: result.snapshot.runId, tenant: principal.tenant, workspace: principal.workspace, errorCode: refusal.code });
      this.events.wake();
    }
    return result;
  }

  /** The run an Idempotency-Key names in the caller's scope: its tenant and workspace ('' for a tenant-level caller). */
  private async byIdempotencyKey(scope: TenantScope, key: string, db: EntityManager): Promise<RunEntity | undefined> {
    return (await db.getRepository(RunEntity).findOne({ where: { tenant: scope.tenant, workspaceKey: scope.workspace ?? '', idempotencyKey: key } })) ?? undefined;
  }

  /**
   * Runs an `INSERT ... ON CONFLICT ("tenant", "workspace_key", "idempotency_key") WHERE "idempotency_key" IS NOT NULL DO NOTHING RETURNING "id"`. An empty
   * answer means a request with the same key won; without a key nothing can conflict, so an empty
   * answer means the row was not written (no replay to look up): it is written once more, and a second
   * empty answer is an error rather than a run that does not exist.
   */
  private async insertRun(insert: () => Promise<Array<{ id: string }>>, idempotencyKey: string | undefined): Promise<Array<{ id: string }>> {
    const first = await insert();
    if (first.length || idempotencyKey !== undefined) return first;
    const again = await insert();
    if (!again.length) throw new InvariantViolation('the database wrote no row for the new run');
    return again;
  }

  /** The insert found the Idempotency-Key taken: a concurrent request with the same key won it. */
  private async replayConcurrent(principal: Principal, key: string, requestHash: string, db: EntityManager): Promise<{ snapshot: RunSnapshot; replayed: boolean }> {
    // The winner's row is not visible yet (it was written in a transaction still open): wait for it
    // up to the advertised ack timeout, then 409 idempotency_in_flight.
    const until = Date.now() + IDEMPOTENCY_ACK_TIMEOUT_SEC * 1000;
    for (;;) {
      const prior = await this.byIdempotencyKey(principal, key, db);
      if (prior) return this.replay(principal, prior, requestHash, db);
      if (Date.now() >= until) throw inFlight(1);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** 409 `run_already_active` (with `Retry-After`) when a run of the caller's scope `scopeId` is active. */
  private async refuseActiveScope(scope: TenantScope, scopeId: string, db: EntityManager): Promise<void> {
    const [active] = (await db.query(
      `SELECT "id", extract(epoch FROM ("lease_expires_at" - now())) AS "lease_left" FROM "run"
       WHERE "tenant" = $1 AND "workspace_key" = $2 AND "scope_id" = $3 AND "status" = ANY($4::text[]) ORDER BY "created_at" LIMIT 1`,
      [scope.tenant, scope.workspace ?? '', scopeId, ACTIVE],
    )) as Array<{ id: string; lease_left: string | number | null }>;
    if (!active) return;
    // Seconds until the active claim can go stale: what is left of its lease, else one lease.
    const left = active.lease_left === null ? NaN : Number(active.lease_left);
    const retryAfter = Math.max(1, Math.ceil(Number.isFinite(left) && left > 0 ? left : this.settings.leaseMs / 1000));
    throw new DomainError('run_already_active', 409, 'A run of this scopeId is already active.', { activeRunId: active.id, activeHost: 'cloud', retryAfter }, { 'Retry-After': String(retryAfter) });
  }

  private async replay(principal: Principal, prior: RunEntity, requestHash: string, db: EntityManager): Promise<{ snapshot: RunSnapshot; replayed: boolean }> {
    if (prior.requestHash !== requestHash) {
      throw new ConflictError('idempotency_key_mismatch', 'This Idempotency-Key was used with another request body.');
    }
    // The answer the first request got; a run created before answers were kept: as it is now.
    const first = prior.createResponse as RunSnapshot | null;
    return { snapshot: first ?? (await readRunSnapshot(db, this.interrupts, principal, prior.id)), replayed: true };
  }

  /**
   * RFC 0058 bounds: `runTimeoutMs`, `maxLoopIterations` (node executions) and `maxCostUsd`, each at
   * most the advertised ceiling, and the RFC 0084 `budget` policy (run-budget.ts) (`recursionLimit` is an alias of `maxLoopIterations`); outside → 400.
   */
  resolveBounds(c: Record<string, unknown>): Record<string, unknown> {
    const l = this.settings.limits;
    const out: Record<string, unknown> = { ...c };
    const problems: Array<{ field: string; message: string }> = [];
    const int = (k: string, max: number) => {
      const v = c[k];
      if (v === undefined) return;
      if (!Number.isInteger(v) || (v as number) < 1 || (v as number) > max) problems.push({ field: `configurable.${k}`, message: `must be an integer from 1 to ${max}` });
    };
    for (const [k, max] of [['runTimeoutMs', l.maxRunDurationMs], ['maxLoopIterations', l.maxLoopIterations], ['recursionLimit', l.maxLoopIterations]] as const) int(k, max);
    if (c.maxCostUsd !== undefined && (typeof c.maxCostUsd !== 'number' || !Number.isFinite(c.maxCostUsd) || c.maxCostUsd < 0 || c.maxCostUsd > l.maxBudgetCostUsd)) {
      problems.push({ field: 'configurable.maxCostUsd', message: `must be a number from 0 to ${l.maxBudgetCostUsd}` });
    }
    problems.push(...budgetPolicyProblems(c.budget));
    if (problems.length) throw new ValidationError('A run bound is outside the host limits.', { problems });
    if (c.maxLoopIterations === undefined && c.recursionLimit !== undefined) out.maxLoopIterations = c.recursionLimit;
    return out;
  }
}

/**
 * The body fields gated on capabilities this host does not advertise, refused with their documented
 * codes (no run is created): `mode: "eval"` (RFC 0081, `agents.evalSuite`) is 501
 * `capability_not_provided`; `residency` (RFC 0129, `dataResidency`) is 422 `residency_unavailable`;
 * `configurable.mockProvider` (run-options.md, `testing.mockProviders`) is 403 `mock_provider_forbidden`.
 */
function refuseGated(req: CreateRunRequest): void {
  if (req.mode !== undefined) {
    throw new DomainError('capability_not_provided', 501, 'This host runs no eval suites (capabilities.agents.evalSuite is not advertised).', { capability: 'agents.evalSuite' });
  }
  if (req.residency !== undefined) throw new UnprocessableError('residency_unavailable', 'This host makes no data-residency guarantee (capabilities.dataResidency is not advertised).', { capability: 'dataResidency' });
  if ((req.configurable ?? {}).mockProvider !== undefined) {
    throw new DomainError('mock_provider_forbidden', 403, 'This host routes no run through a mock provider (capabilities.testing.mockProviders is not advertised).', { field: 'configurable.mockProvider' });
  }
}
