import { AuditLogService, auditActor } from '../../platform/audit/audit-log.service';
import { createHash, randomUUID } from 'node:crypto';
import { Inject, Injectable, OnModuleInit } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { canonicalJson } from '../../platform/artifacts/artifact-registry.service';
import { ConflictError, DomainError, ForbiddenError, NotFoundError, UnprocessableError, ValidationError } from '../../platform/errors/domain-error';
import { EventLogService } from '../../platform/events/event-log.service';
import { RunEntity } from '../../platform/events/event.entities';
import { RUN_CREATE_SCOPE, RunLauncherRegistry, WorkflowRunLauncher } from '../../platform/events/run-launcher';
import { requireDelegable } from '../../platform/identity/delegation';
import type { Principal, TenantScope } from '../../platform/identity/principal';
import { ApprovalsService } from '../approvals';
import { NodeExecutorRegistry } from './node-executor-registry.service';
import { keysetPage } from '../../platform/pagination/keyset';
import type { PageRequest } from '../../platform/pagination/page-query';
import { PauseRequest, RunEngineService } from './run-engine.service';
import { RunNodeEntity } from './run-node.entity';
import { RunMetrics } from './runs.metrics';
import { RUNS_SETTINGS, RunsSettings } from './runs.settings';
import { parseDefinition, WorkflowDefinition } from './workflow-definition';
import { CHAIN_CATALOG_VERSION_SQL, WorkflowResolver } from './workflow-resolver.service';
import { RUNS_CHANNEL } from '../../platform/database/database-notifications';
import { InterruptsService, InterruptView } from './interrupts/interrupts.service';
import { UUID } from '../../platform/ids';
import { checkIdempotencyKey, IDEMPOTENCY_ACK_TIMEOUT_SEC, inFlight } from '../../platform/idempotency/idempotency-store.service';
import { currentTraceContext } from '../../platform/tracing/trace-context';
import { formatTraceparent } from '../../platform/tracing/tracing';

export const RUN_STATUSES = ['pending', 'running', 'paused', 'waiting-approval', 'waiting-input', 'waiting-external', 'completed', 'failed', 'cancelling', 'cancelled'] as const;
const TERMINAL = new Set(['completed', 'failed', 'cancelled']);
/** Most chains one run's authority is worked out over (a chain calling chains calling chains...). */
const MAX_CHAINS = 100;

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

/** The wire RunSnapshot (run-snapshot.schema.json), plus `outputs` on a completed run. */
export interface RunSnapshot {
  runId: string;
  workflowId: string;
  status: string;
  owner: { tenant: string; workspace?: string; principal?: string };
  currentNodeId?: string;
  startedAt?: string;
  completedAt?: string;
  nodeStates?: Record<string, { status: string; attempt: number; error?: { code: string; message: string } }>;
  variables?: Record<string, unknown>;
  configurable?: Record<string, unknown>;
  tags?: string[];
  metadata?: Record<string, unknown>;
  outputs?: Record<string, unknown>;
  error?: { code: string; message: string; details?: Record<string, unknown> };
  metrics?: { nodeExecutions: number; openwopCost: { usd: number } };
  /** A suspended run's interrupt (kind, node, resume schema, quorum, signed token of an external event). */
  interrupt?: InterruptView;
}

/**
 * The chain a run executes, as the engine stored it when the run was created (so a pack installed
 * again later does not change what an earlier run shows): its nodes in topological order and its edges.
 * A run that executed no chain (refused at start, or a host run) has no nodes.
 */
export interface RunDefinitionView {
  runId: string;
  workflowId: string;
  nodes: Array<{ id: string; typeId: string; config: Record<string, unknown> }>;
  edges: Array<{ from: string; to: string; fromPort?: string; toPort?: string }>;
}

export interface PauseAnswer {
  runId: string;
  status: 'paused';
  pausedAt: string;
}

/** One entry of `POST /v1/runs:bulk-cancel`'s `results`. */
export interface BulkCancelResult {
  runId: string;
  ok: boolean;
  status?: 'cancelling' | 'cancelled';
  error?: { code: string; message: string; details?: Record<string, unknown> };
}

export interface RunPage {
  runs: RunSnapshot[];
  nextCursor: string | null;
}

/** Workflow runs: creation (idempotent), reads, listing and cancellation. Execution is the engine's. */
@Injectable()
export class RunsService implements OnModuleInit, WorkflowRunLauncher {
  constructor(
    private readonly launchers: RunLauncherRegistry,
    private readonly ds: DataSource,
    private readonly resolver: WorkflowResolver,
    private readonly executors: NodeExecutorRegistry,
    private readonly engine: RunEngineService,
    private readonly events: EventLogService,
    private readonly approvals: ApprovalsService,
    private readonly metrics: RunMetrics,
    private readonly interrupts: InterruptsService,
    @Inject(RUNS_SETTINGS) private readonly settings: RunsSettings,
    private readonly audit: AuditLogService,
  ) {}

  onModuleInit(): void {
    this.launchers.register(this);
  }

  async launch(principal: Principal, req: CreateRunRequest, opts: { idempotencyKey?: string; manager?: EntityManager; recordRefusal?: boolean } = {}): Promise<{ runId: string }> {
    // A key the host minted (a goal iteration, an automation slot) lives in a keyspace no caller's
    // Idempotency-Key can reach (idempotency.md §"Keyspace separation"): see HOST_KEY_PREFIX.
    const key = opts.idempotencyKey === undefined ? undefined : `${HOST_KEY_PREFIX}${opts.idempotencyKey}`;
    const { snapshot } = await this.create(principal, req, key, undefined, opts.manager, { recordRefusal: opts.recordRefusal, requireCreateScope: true, hostKey: true });
    return { runId: snapshot.runId };
  }

  async requiredScopes(scope: TenantScope, workflowId: string, manager?: EntityManager): Promise<string[]> {
    const needed = new Set<string>([RUN_CREATE_SCOPE]);
    const seen = new Set<string>();
    const queue = [workflowId];
    // Chains calling chains: each once (cycles and diamonds included), at most MAX_CHAINS of them.
    while (queue.length && seen.size < MAX_CHAINS) {
      const wf = queue.shift()!;
      if (seen.has(wf)) continue;
      seen.add(wf);
      const dag = await this.resolver.resolve(scope, wf, manager ?? this.ds.manager);
      const definition = dag ? parseDefinition(wf, dag).definition : undefined;
      for (const n of definition?.nodes ?? []) {
        const needs = await this.executors.get(n.typeId)?.provider.requiredScopesOf?.(n.config, { tenant: scope.tenant, workspace: scope.workspace });
        for (const s of needs?.scopes ?? []) needed.add(s);
        for (const child of needs?.childWorkflows ?? []) if (!seen.has(child)) queue.push(child);
      }
    }
    return [...needed].sort();
  }

  start(runId: string): void {
    this.engine.kick(runId);
  }

  async status(scope: TenantScope, runId: string): Promise<{ status: string; outputs?: Record<string, unknown>; error?: { code: string; message: string }; costUsd?: number } | undefined> {
    const run = await this.find(scope, runId);
    if (!run) return undefined;
    return { status: run.status, ...(run.outputs ? { outputs: run.outputs } : {}), ...(run.error ? { error: run.error } : {}), costUsd: run.costUsd };
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
    opts: { recordRefusal?: boolean; requireCreateScope?: boolean; hostKey?: boolean } & CreateRunOptions = {},
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
    const requestHash = createHash('sha256').update(canonicalJson({ ...req, tenantId: undefined })).digest('hex');
    // With X-Dedup the key is looked up first: the active run of the scope may be the key's own.
    if (idempotencyKey && opts.dedup) {
      const prior = await this.byIdempotencyKey(principal, idempotencyKey, db);
      if (prior) return this.replay(principal, prior, requestHash, db);
    }
    const metadata: Record<string, unknown> = {};
    if (req.tags) metadata.tags = req.tags;
    if (req.metadata) metadata.metadata = req.metadata;
    if (parentRunId) metadata.parentRunId = parentRunId;
    if (req.callbackUrl) metadata.callbackUrl = req.callbackUrl;
    const trace = currentTraceContext();
    let dedupChecked = false;
    // A run is inserted only while the tenant's chains are those it was planned from (the insert
    // checks their version): another replica's install or uninstall in between is planned again.
    for (let attempt = 0; ; attempt++) {
      let planned: { definition: WorkflowDefinition; version: string };
      try {
        planned = await this.plan(principal, req, db, attempt > 0);
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
      const runId = randomUUID();
      const definitionText = JSON.stringify(planned.definition);
      const inputs = req.inputs ?? {};
      // The answer is the run as created (pending), built from what is inserted, not read back; a
      // keyed create stores it with the row, so a replay answers it again.
      const snapshot = createdSnapshot(runId, principal, req.workflowId, inputs, configurable, metadata);
      // Outside a caller's transaction the insert also claims the run for this replica when it has
      // room (lease on the database clock, fence 1), so it starts without a claim statement of its
      // own; a run left unclaimed is announced to the other replicas (and found by claim passes).
      const claim = !manager && this.engine.reserve();
      const values = {
        runId,
        metadata,
        definitionText,
        inputs,
        configurable,
        idempotencyKey,
        requestHash,
        trace,
        version: planned.version,
        createResponse: idempotencyKey !== undefined ? JSON.stringify(snapshot) : null,
        claim,
        dedup: !!opts.dedup,
      };
      let outcome: { current: boolean; inserted: boolean };
      try {
        outcome = await this.insertCreated(principal, req, values, db, !!manager);
      } catch (e) {
        if (claim) this.engine.unreserve();
        throw e;
      }
      if (!outcome.inserted && claim) this.engine.unreserve();
      if (!outcome.current) {
        this.resolver.forget(principal);
        if (attempt >= 4) throw new Error('the installed chains kept changing while the run was created');
        continue;
      }
      if (!outcome.inserted) return this.replayConcurrent(principal, idempotencyKey!, requestHash, db);
      if (claim) {
        this.engine.adopt({
          id: runId,
          tenant: principal.tenant,
          workspace: principal.workspace ?? null,
          principal: principal.principal,
          status: 'pending',
          workflow_id: req.workflowId,
          // Copies, as the engine would have read them: nothing it does reaches the cached chain or the request.
          definition: JSON.parse(definitionText) as WorkflowDefinition,
          inputs: JSON.parse(JSON.stringify(inputs)) as Record<string, unknown>,
          configurable: JSON.parse(JSON.stringify(configurable)) as Record<string, unknown>,
          scopes: [...principal.scopes],
          fence: 1,
          cancel_requested: false,
          node_executions: 0,
          cost_usd: 0,
          started_at: null,
          trace_parent: trace ? formatTraceparent(trace) : null,
          trace_state: trace?.tracestate ?? null,
        });
      }
      // Inside a caller's transaction the caller starts it after its commit (RunLauncher.start).
      return { snapshot, replayed: false };
    }
  }

  /**
   * The run's insert, one statement: the row (claimed for this replica when `claim`), only while the
   * tenant's catalog version is `version`; a notification for the other replicas when it is left
   * unclaimed. `current` false: the chains moved, nothing was inserted. `inserted` false with
   * `current`: the Idempotency-Key is taken (a replay).
   */
  private async insertCreated(
    principal: Principal,
    req: CreateRunRequest,
    v: {
      runId: string;
      metadata: Record<string, unknown>;
      definitionText: string;
      inputs: Record<string, unknown>;
      configurable: Record<string, unknown>;
      idempotencyKey?: string;
      requestHash: string;
      trace: ReturnType<typeof currentTraceContext>;
      version: string;
      createResponse: string | null;
      claim: boolean;
      dedup: boolean;
    },
    db: EntityManager,
    inTransaction: boolean,
  ): Promise<{ current: boolean; inserted: boolean }> {
    const notify = v.claim ? '' : `, n AS (SELECT pg_notify('${RUNS_CHANNEL}', '') FROM ins)`;
    const insert = async () =>
      (await db.query(
        `WITH v AS (SELECT ${CHAIN_CATALOG_VERSION_SQL('$1')} = $16::bigint AS "current"),
         ins AS (
           INSERT INTO "run" ("id", "tenant", "workspace", "workspace_key", "principal", "kind", "status", "metadata", "workflow_id", "definition", "inputs", "configurable", "scopes", "idempotency_key", "request_hash", "scope_id", "dedup_scope", "trace_parent", "trace_state", "create_response", "lease_owner", "lease_expires_at", "fence")
           SELECT $17::uuid, $1::text, $2::text, coalesce($2::text, ''), $3::text, 'workflow', 'pending', $4::jsonb, $5::text, $6::jsonb, $7::jsonb, $8::jsonb, $9::text[], $10::text, $11::text, $12::text, $13::text, $14::text, $15::text, $18::jsonb,
             $19::text, CASE WHEN $19::text IS NULL THEN NULL ELSE now() + ($20::int * interval '1 millisecond') END, CASE WHEN $19::text IS NULL THEN 0 ELSE 1 END
           FROM v WHERE v."current"
           ON CONFLICT ("tenant", "workspace_key", "idempotency_key") DO NOTHING RETURNING "id"
         )${notify}
         SELECT v."current", (SELECT "id" FROM ins) AS "id"${v.claim ? '' : ', (SELECT count(*) FROM n) AS "notified"'} FROM v`,
        [
          principal.tenant,
          principal.workspace ?? null,
          principal.principal,
          JSON.stringify(v.metadata),
          req.workflowId,
          v.definitionText,
          JSON.stringify(v.inputs),
          JSON.stringify(v.configurable),
          [...principal.scopes],
          v.idempotencyKey ?? null,
          v.requestHash,
          req.scopeId ?? null,
          v.dedup ? req.scopeId! : null,
          // The creating request's trace (its span, while tracing is on): the run's spans join it.
          v.trace ? formatTraceparent(v.trace) : null,
          v.trace?.tracestate ?? null,
          v.version,
          v.runId,
          v.createResponse,
          v.claim ? this.engine.owner : null,
          this.settings.leaseMs,
        ],
      )) as Array<{ current: boolean; id: string | null }>;
    for (let attempt = 0; ; attempt++) {
      try {
        const [row] = await insert();
        if (!row.current) return { current: false, inserted: false };
        if (row.id) return { current: true, inserted: true };
        // Without a key nothing can conflict: the row was not written. Once more, then it is an error.
        if (v.idempotencyKey !== undefined) return { current: true, inserted: false };
        if (attempt >= 1) throw new Error('the database wrote no row for the new run');
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
        return { definition: this.executable(req.workflowId, hit.chain.dag), version: hit.version };
      } catch (e) {
        if (!(e instanceof DomainError)) throw e;
      }
    }
    const current = await this.resolver.current(principal, db);
    const chain = current.chain(req.workflowId);
    if (!chain) throw new NotFoundError(`No workflow "${req.workflowId}" is installed for your tenant.`, { workflowId: req.workflowId });
    return { definition: this.executable(req.workflowId, chain.dag), version: current.version };
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
        `INSERT INTO "run" ("tenant", "workspace", "workspace_key", "principal", "kind", "status", "metadata", "workflow_id", "inputs", "configurable", "scopes", "idempotency_key", "request_hash", "error", "started_at", "completed_at")
         VALUES ($1, $2, coalesce($2, ''), $3, 'workflow', 'failed', '{}'::jsonb, $4, $5::jsonb, '{}'::jsonb, $6::text[], $7, $8, $9::jsonb, now(), now())
         ON CONFLICT ("tenant", "workspace_key", "idempotency_key") DO NOTHING RETURNING "id"`,
        [principal.tenant, principal.workspace ?? null, principal.principal, req.workflowId, JSON.stringify(req.inputs ?? {}), [...principal.scopes], idempotencyKey ?? null, requestHash, JSON.stringify(error)],
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
      return { snapshot: await this.get(principal, runId, db), replayed: false };
    };
    const result = manager ? await write(manager) : await this.ds.transaction(write);
    if (!result.replayed) {
      this.metrics.runFinished('failed');
      this.events.wake();
    }
    return result;
  }

  /**
   * A child run of a `workflow` tool (same principal, no idempotency key). The child acts for the
   * parent's principal, so that principal must hold everything the child chain needs
   * (`requiredScopes`): otherwise 403 `forbidden` with `details.requiredScopes`, and no child run.
   */
  async startChild(principal: Principal, workflowId: string, inputs: Record<string, unknown>, parentRunId: string): Promise<string> {
    requireDelegable(principal, await this.requiredScopes(principal, workflowId), `A child run of "${workflowId}"`);
    return (await this.create(principal, { workflowId, inputs }, undefined, parentRunId, undefined, { requireCreateScope: true })).snapshot.runId;
  }

  /** Waits until a run is terminal (cancelling it when `signal` fires). */
  async awaitTerminal(principal: Principal, runId: string, signal: AbortSignal): Promise<RunSnapshot> {
    let cancelled = false;
    for (;;) {
      const snap = await this.get(principal, runId);
      if (TERMINAL.has(snap.status)) return snap;
      if (signal.aborted && !cancelled) {
        cancelled = true;
        await this.cancel(principal, runId).catch(() => undefined);
      }
      await this.engine.waitLocal(runId, 200);
    }
  }

  async get(scope: TenantScope, runId: string, manager?: EntityManager): Promise<RunSnapshot> {
    const run = await this.find(scope, runId, manager);
    if (!run) throw new NotFoundError('No such run.');
    const nodes = run.kind === 'workflow' ? await (manager ?? this.ds.manager).getRepository(RunNodeEntity).find({ where: { runId: run.id } }) : [];
    const s = snapshot(run, nodes);
    const interrupt = run.kind === 'workflow' ? await this.interrupts.forSnapshot(run) : undefined;
    if (interrupt) s.interrupt = interrupt;
    return s;
  }

  /** The run's id and status only (one indexed read; unknown and foreign ids are 404): what a stream needs to open. */
  async state(scope: TenantScope, runId: string): Promise<Pick<RunSnapshot, 'runId' | 'status'>> {
    const rows = UUID.test(runId)
      ? ((await this.ds.query(`SELECT "id", "status" FROM "run" WHERE "id" = $1 AND "tenant" = $2 AND ($3::text IS NULL OR "workspace" = $3::text)`, [runId, scope.tenant, scope.workspace ?? null])) as Array<{ id: string; status: string }>)
      : [];
    if (!rows.length) throw new NotFoundError('No such run.');
    return { runId: rows[0].id, status: rows[0].status };
  }

  /** The chain a run of the caller's tenant executes (unknown and foreign ids are 404). */
  async definition(scope: TenantScope, runId: string): Promise<RunDefinitionView> {
    const run = await this.find(scope, runId);
    if (!run) throw new NotFoundError('No such run.');
    const def = run.definition as Partial<WorkflowDefinition> | null;
    return {
      runId: run.id,
      workflowId: run.workflowId ?? `host.${run.kind}`,
      nodes: (def?.nodes ?? []).map((n) => ({ id: n.id, typeId: n.typeId, config: n.config ?? {} })),
      edges: (def?.edges ?? []).map((e) => ({ from: e.from, to: e.to, ...(e.fromPort ? { fromPort: e.fromPort } : {}), ...(e.toPort ? { toPort: e.toPort } : {}) })),
    };
  }

  /** The caller's runs, newest first, a page at a time, optionally of one status. */
  async list(scope: TenantScope, q: PageRequest & { status?: string }): Promise<RunPage> {
    const qb = this.ds.getRepository(RunEntity).createQueryBuilder('r').where('r.tenant = :tenant', { tenant: scope.tenant });
    if (scope.workspace) qb.andWhere('r.workspace = :workspace', { workspace: scope.workspace });
    if (q.status) qb.andWhere('r.status = :status', { status: q.status });
    const page = await keysetPage(qb, q, {
      keys: [{ column: 'r.created_at', type: 'timestamptz' }, { column: 'r.id', type: 'uuid' }],
      direction: 'DESC',
      binding: { list: 'runs', tenant: scope.tenant, workspace: scope.workspace, filters: { status: q.status } },
    });
    return { runs: page.items.map((r) => snapshot(r, [])), nextCursor: page.nextCursor };
  }

  /**
   * Requests cancellation: a run nobody executes right now (pending, waiting on an approval, or of
   * a dead replica) is cancelled at once; a running one becomes `cancelling` and its replica aborts
   * the node in flight and writes `run.cancelled`. A run already finished is answered as it is.
   * The run row is locked before any gate of it, as a resolving decision does, so a cancel racing a
   * resolve ends in exactly one of them.
   */
  async cancel(principal: Principal, runId: string, reason = 'cancel-requested'): Promise<RunSnapshot> {
    const run = await this.find(principal, runId);
    if (!run) throw new NotFoundError('No such run.');
    if (run.kind !== 'workflow') throw new ConflictError('run_not_cancellable', 'Only workflow runs can be cancelled.');
    const direct = await this.ds.transaction(async (m) => {
      const [row] = (await m.query(
        `SELECT "status", ("lease_expires_at" IS NULL OR "lease_expires_at" < now()) AS "free", "started_at" FROM "run" WHERE "id" = $1 FOR UPDATE`,
        [run.id],
      )) as Array<{ status: string; free: boolean; started_at: Date | null }>;
      // Cancel is idempotent: a run that already ended answers as it is (200), nothing changes.
      if (TERMINAL.has(row.status)) return 'terminal' as const;
      // Last in each branch: the tenant's audit chain stays locked only until the commit.
      const audited = () =>
        this.audit.record(m, {
          tenant: run.tenant, workspace: run.workspace ?? undefined, actor: auditActor(principal), action: 'run.cancel-requested',
          resource: { type: 'run', id: run.id }, details: { reason, statusBefore: row.status },
        });
      if (!row.free) {
        await m.query(`UPDATE "run" SET "cancel_requested" = true, "status" = 'cancelling' WHERE "id" = $1`, [run.id]);
        await audited();
        return false;
      }
      // Nobody executes it: finish it here.
      const waiting = await m.getRepository(RunNodeEntity).find({ where: { runId: run.id } });
      const evts: Array<{ type: string; payload: Record<string, unknown>; nodeId?: string }> = [];
      for (const n of waiting.filter((w) => w.status === 'waiting')) {
        if (n.gateId) await this.approvals.cancel(m, n.gateId, principal, 'run cancelled');
        evts.push({ type: 'node.cancelled', nodeId: n.nodeId, payload: { nodeId: n.nodeId, reason: 'run-cancelled' } });
        await m.query(`UPDATE "run_node" SET "status" = 'cancelled', "updated_at" = now() WHERE "run_id" = $1 AND "node_id" = $2`, [run.id, n.nodeId]);
      }
      evts.push({ type: 'run.cancelled', payload: { reason, cancelledBy: principal.principal } });
      await m.query(
        `UPDATE "run" SET "cancel_requested" = true, "status" = 'cancelled', "completed_at" = now(), "current_node_id" = NULL, "lease_owner" = NULL, "lease_expires_at" = NULL WHERE "id" = $1`,
        [run.id],
      );
      await this.events.appendBatch({ tenant: run.tenant, workspace: run.workspace ?? undefined }, run.id, evts, m);
      await audited();
      return true;
    });
    if (direct === 'terminal') return this.get(principal, run.id);
    if (!direct) this.engine.cancelLocal(run.id);
    else {
      this.metrics.runFinished('cancelled');
      this.events.wake();
    }
    return this.get(principal, run.id);
  }

  /**
   * Cancels each run independently, in request order (one failing never blocks another): `ok` with
   * the post-acceptance status (`cancelling`, or `cancelled` when nothing was executing it or it was
   * cancelled already, so a repeat is idempotent), else the reason: `not_found` (unknown or another
   * tenant's), `run_terminal` (completed or failed), `run_not_cancellable`.
   */
  async bulkCancel(principal: Principal, runIds: readonly string[], reason = 'bulk-cancel-requested'): Promise<BulkCancelResult[]> {
    const results: BulkCancelResult[] = [];
    for (const runId of runIds) {
      try {
        const snap = await this.cancel(principal, runId, reason);
        if (snap.status === 'cancelled' || snap.status === 'cancelling') results.push({ runId, ok: true, status: snap.status });
        // The run finished on its own between the request and the cancel.
        else results.push({ runId, ok: false, error: { code: 'run_terminal', message: `The run is already ${snap.status}.`, details: { runStatus: snap.status } } });
      } catch (e) {
        if (e instanceof DomainError && e.code === 'run_not_active') {
          const status = String(e.details?.status ?? '');
          if (status === 'cancelled') results.push({ runId, ok: true, status: 'cancelled' });
          else results.push({ runId, ok: false, error: { code: 'run_terminal', message: e.message, details: { runStatus: status } } });
        } else if (e instanceof DomainError) {
          results.push({ runId, ok: false, error: { code: e.code, message: e.message } });
        } else {
          throw e;
        }
      }
    }
    return results;
  }

  /**
   * An operator's pause (`POST /v1/runs/{runId}:pause`). A run nobody executes (pending, or between
   * claims) is paused at once; a running one stops starting nodes (`drain-current-node` lets the
   * nodes in flight finish, `immediate` aborts them to run again on resume) and its replica writes
   * `run.paused` and releases the lease. Already paused, or pause pending: 409 `details.runStatus`,
   * unless the same Idempotency-Key repeats the pause (202 with the first answer). Terminal,
   * cancelling or waiting runs: 409 `details.runStatus`.
   */
  async pause(principal: Principal, runId: string, body: { reason?: string; drainPolicy?: PauseRequest['drainPolicy'] }, idempotencyKey?: string): Promise<PauseAnswer> {
    if (idempotencyKey !== undefined && !/^[\x21-\x7e]{1,255}$/.test(idempotencyKey)) {
      throw new ValidationError('Idempotency-Key must be 1 to 255 visible ASCII characters.', { header: 'Idempotency-Key' });
    }
    const run = await this.find(principal, runId);
    if (!run) throw new NotFoundError('No such run.');
    if (run.kind !== 'workflow') throw new ConflictError('run_not_pausable', 'Only workflow runs can be paused.', { runStatus: run.status });
    const drainPolicy = body.drainPolicy ?? 'drain-current-node';
    const result = await this.ds.transaction(async (m) => {
      const [row] = (await m.query(
        `SELECT "status", ("lease_expires_at" IS NULL OR "lease_expires_at" < now()) AS "free", "metadata", "cancel_requested" FROM "run" WHERE "id" = $1 FOR UPDATE`,
        [run.id],
      )) as Array<{ status: string; free: boolean; metadata: Record<string, unknown> | null; cancel_requested: boolean }>;
      const prior = (row.metadata?.pause ?? undefined) as PauseRequest | undefined;
      if (prior) {
        // The first answer again (it carried the time the pause was accepted).
        if (idempotencyKey && prior.idempotencyKey === idempotencyKey) return { answer: { runId: run.id, status: 'paused' as const, pausedAt: prior.requestedAt }, direct: false, request: prior };
        throw new ConflictError('run_not_pausable', `The run is already ${row.status === 'paused' ? 'paused' : 'pausing'}.`, { runStatus: row.status, pausedAt: prior.pausedAt ?? prior.requestedAt });
      }
      if (TERMINAL.has(row.status)) throw new ConflictError('run_terminal', `The run is already ${row.status}.`, { runStatus: row.status });
      if ((row.status !== 'pending' && row.status !== 'running') || row.cancel_requested) {
        throw new ConflictError('run_not_pausable', `A ${row.status} run cannot be paused.`, { runStatus: row.status });
      }
      const [{ now }] = (await m.query(`SELECT to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS "now"`)) as Array<{ now: string }>;
      const request: PauseRequest = { drainPolicy, requestedAt: now, fromStatus: row.status, ...(body.reason ? { reason: body.reason } : {}), ...(idempotencyKey ? { idempotencyKey } : {}) };
      if (row.free) {
        // Nobody executes it: paused here and now.
        request.pausedAt = now;
        await m.query(`UPDATE "run" SET "status" = 'paused', "metadata" = jsonb_set(coalesce("metadata", '{}'::jsonb), '{pause}', $2::jsonb) WHERE "id" = $1`, [run.id, JSON.stringify(request)]);
        await this.events.appendBatch({ tenant: run.tenant, workspace: run.workspace ?? undefined }, run.id, [{ type: 'run.paused', payload: { drainPolicy, ...(body.reason ? { reason: body.reason } : {}) } }], m);
        return { answer: { runId: run.id, status: 'paused' as const, pausedAt: now }, direct: true, request };
      }
      await m.query(`UPDATE "run" SET "metadata" = jsonb_set(coalesce("metadata", '{}'::jsonb), '{pause}', $2::jsonb) WHERE "id" = $1`, [run.id, JSON.stringify(request)]);
      return { answer: { runId: run.id, status: 'paused' as const, pausedAt: now }, direct: false, request };
    });
    if (result.direct) this.events.wake();
    else this.engine.pauseLocal(run.id, result.request);
    return result.answer;
  }

  /** `POST /v1/runs/{runId}:resume`: a paused run continues where it stopped (`run.resumed`); anything else is 409 `details.runStatus`. */
  async resume(principal: Principal, runId: string, reason?: string): Promise<{ runId: string; status: 'running'; resumedAt: string }> {
    const run = await this.find(principal, runId);
    if (!run) throw new NotFoundError('No such run.');
    const resumedAt = await this.ds.transaction(async (m) => {
      const [row] = (await m.query(`SELECT "status", "metadata" FROM "run" WHERE "id" = $1 FOR UPDATE`, [run.id])) as Array<{ status: string; metadata: Record<string, unknown> | null }>;
      if (row.status !== 'paused') throw new ConflictError('run_not_paused', `The run is ${row.status}, not paused.`, { runStatus: row.status });
      const prior = (row.metadata?.pause ?? {}) as Partial<PauseRequest>;
      const back = prior.fromStatus === 'pending' ? 'pending' : 'running';
      const [{ now }] = (await m.query(
        `UPDATE "run" SET "status" = $2, "metadata" = coalesce("metadata", '{}'::jsonb) - 'pause', "lease_owner" = NULL, "lease_expires_at" = NULL WHERE "id" = $1
         RETURNING to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS "now"`,
        [run.id, back],
      ).then((r: unknown) => (Array.isArray(r) && Array.isArray(r[0]) ? r[0] : r))) as Array<{ now: string }>;
      await this.events.appendBatch({ tenant: run.tenant, workspace: run.workspace ?? undefined }, run.id, [{ type: 'run.resumed', payload: { ...(reason ? { reason } : {}) } }], m);
      return now;
    });
    this.events.wake();
    this.engine.kick(run.id);
    return { runId: run.id, status: 'running', resumedAt };
  }

  /** The tenant's run (and workspace's, when the caller has one); never another tenant's. */
  private async find(scope: TenantScope, runId: string, manager?: EntityManager): Promise<RunEntity | undefined> {
    if (!UUID.test(runId)) return undefined;
    const where: Record<string, unknown> = { id: runId, tenant: scope.tenant };
    if (scope.workspace) where.workspace = scope.workspace;
    return (await (manager ?? this.ds.manager).getRepository(RunEntity).findOne({ where })) ?? undefined;
  }

  /** The run an Idempotency-Key names in the caller's scope: its tenant and workspace ('' for a tenant-level caller). */
  private async byIdempotencyKey(scope: TenantScope, key: string, db: EntityManager): Promise<RunEntity | undefined> {
    return (await db.getRepository(RunEntity).findOne({ where: { tenant: scope.tenant, workspaceKey: scope.workspace ?? '', idempotencyKey: key } })) ?? undefined;
  }

  /**
   * Runs an `INSERT ... ON CONFLICT ("tenant", "workspace_key", "idempotency_key") DO NOTHING RETURNING "id"`. An empty
   * answer means a request with the same key won; without a key nothing can conflict, so an empty
   * answer means the row was not written (no replay to look up): it is written once more, and a second
   * empty answer is an error rather than a run that does not exist.
   */
  private async insertRun(insert: () => Promise<Array<{ id: string }>>, idempotencyKey: string | undefined): Promise<Array<{ id: string }>> {
    const first = await insert();
    if (first.length || idempotencyKey !== undefined) return first;
    const again = await insert();
    if (!again.length) throw new Error('the database wrote no row for the new run');
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
    return { snapshot: first ?? (await this.get(principal, prior.id, db)), replayed: true };
  }

  /**
   * RFC 0058 bounds: `runTimeoutMs`, `maxLoopIterations` (node executions) and `maxCostUsd`, each at
   * most the advertised ceiling (`recursionLimit` is an alias of `maxLoopIterations`); outside → 400.
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
    int('runTimeoutMs', l.maxRunDurationMs);
    int('maxLoopIterations', l.maxLoopIterations);
    int('recursionLimit', l.maxLoopIterations);
    if (c.maxCostUsd !== undefined && (typeof c.maxCostUsd !== 'number' || !Number.isFinite(c.maxCostUsd) || c.maxCostUsd < 0 || c.maxCostUsd > l.maxBudgetCostUsd)) {
      problems.push({ field: 'configurable.maxCostUsd', message: `must be a number from 0 to ${l.maxBudgetCostUsd}` });
    }
    if (problems.length) throw new ValidationError('A run bound is outside the host limits.', { problems });
    if (c.maxLoopIterations === undefined && c.recursionLimit !== undefined) out.maxLoopIterations = c.recursionLimit;
    return out;
  }
}

/** The snapshot of a workflow run as `create` inserts it (pending, nothing run yet): what a read of the new row would answer. */
function createdSnapshot(
  runId: string,
  principal: Principal,
  workflowId: string,
  inputs: Record<string, unknown>,
  configurable: Record<string, unknown>,
  metadata: Record<string, unknown>,
): RunSnapshot {
  const row = {
    id: runId,
    tenant: principal.tenant,
    workspace: principal.workspace ?? null,
    principal: principal.principal,
    kind: 'workflow',
    status: 'pending',
    workflowId,
    currentNodeId: null,
    startedAt: null,
    completedAt: null,
    inputs,
    configurable,
    metadata,
    outputs: null,
    error: null,
    nodeExecutions: 0,
    costUsd: 0,
  } as unknown as RunEntity;
  // Through JSON, as the stored row would come back: the answer shares nothing with the request.
  return JSON.parse(JSON.stringify(snapshot(row, []))) as RunSnapshot;
}

export function snapshot(r: RunEntity, nodes: RunNodeEntity[]): RunSnapshot {
  const owner: RunSnapshot['owner'] = { tenant: r.tenant };
  if (r.workspace) owner.workspace = r.workspace;
  if (r.principal) owner.principal = r.principal;
  const s: RunSnapshot = { runId: r.id, workflowId: r.workflowId ?? `host.${r.kind}`, status: r.status, owner };
  if (r.currentNodeId) s.currentNodeId = r.currentNodeId;
  if (r.startedAt) s.startedAt = r.startedAt.toISOString();
  else if (r.kind !== 'workflow') s.startedAt = r.createdAt.toISOString();
  if (r.completedAt) s.completedAt = r.completedAt.toISOString();
  if (r.kind === 'workflow') {
    s.nodeStates = Object.fromEntries(
      nodes.map((n) => [n.nodeId, { status: n.status, attempt: n.attempt, ...(n.error ? { error: n.error } : {}) }]),
    );
    s.variables = { inputs: r.inputs ?? {} };
    s.configurable = r.configurable ?? {};
    const meta = r.metadata ?? {};
    if (Array.isArray(meta.tags)) s.tags = meta.tags as string[];
    if (meta.metadata && typeof meta.metadata === 'object') s.metadata = meta.metadata as Record<string, unknown>;
    if (r.outputs) s.outputs = r.outputs;
    if (r.error) s.error = r.error;
    s.metrics = { nodeExecutions: r.nodeExecutions, openwopCost: { usd: r.costUsd } };
  }
  return s;
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
  if (req.residency !== undefined) {
    throw new UnprocessableError('residency_unavailable', 'This host makes no data-residency guarantee (capabilities.dataResidency is not advertised).', { capability: 'dataResidency' });
  }
  const c = req.configurable ?? {};
  if (c.mockProvider !== undefined) {
    throw new DomainError('mock_provider_forbidden', 403, 'This host routes no run through a mock provider (capabilities.testing.mockProviders is not advertised).', { field: 'configurable.mockProvider' });
  }
}
