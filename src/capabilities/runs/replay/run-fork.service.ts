import { randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { canonicalJson } from '../../../platform/artifacts/artifact-registry.service';
import { AuditLogService, auditActor } from '../../../platform/audit/audit-log.service';
import { NotFoundError, UnprocessableError, ValidationError } from '../../../platform/errors/domain-error';
import { InvariantViolation } from '../../../platform/errors/internal-fault';
import { EventLogService } from '../../../platform/events/event-log.service';
import type { StoredEvent } from '../../../platform/events/event.entities';
import { storedEvents } from '../../../platform/events/stored-events';
import { RunEntity } from '../run.entity';
import { UUID } from '../../../platform/ids';
import type { Principal, TenantScope } from '../../../platform/identity/principal';
import { currentTraceContext } from '../../../platform/tracing/trace-context';
import { formatTraceparent } from '../../../platform/tracing/tracing';
import { RunEngineService } from '../engine/run-engine.service';
import { RunCreationService } from '../run-creation.service';
import type { RunSnapshot } from '../run-snapshot';
import { RunsService } from '../runs.service';
import { RUNS_SETTINGS, RunsSettings } from '../runs.settings';
import { parseDefinition } from '../workflow-definition';
import { checkDeferredOverrides } from '../run-inputs';
import { WorkflowResolver } from '../workflow-resolver.service';
import { inScope } from '../../../platform/tenancy/workspace-scope';
import { principalRef } from '../run-principal.entity';

export const FORK_MODES = ['replay', 'branch'] as const;
export type ForkMode = (typeof FORK_MODES)[number];

/** The lineage a fork carries on its run row (`metadata.fork`); the engine reads it (a replay reproduces recorded outcomes). */
export interface ForkLineage {
  sourceRunId: string;
  mode: ForkMode;
  fromSeq: number;
}

export interface ForkRequest {
  fromSeq?: number;
  mode: ForkMode;
  runOptionsOverlay?: Record<string, unknown>;
}

export interface ForkAnswer {
  runId: string;
  sourceRunId: string;
  fromSeq: number;
  mode: ForkMode;
  status: string;
}

/**
 * The chain a fork would execute, as installed now: `installed` (the same definition the source ran),
 * `changed` (another version of it is installed), `uninstalled`; `not-executed` when the inherited
 * history settles every node (the fork executes none).
 */
export type ForkChainState = 'installed' | 'changed' | 'uninstalled' | 'not-executed';

/** The RunOptions keys a branch overlay may carry (run-options.schema.json). */
const OVERLAY_KEYS = new Set(['configurable', 'tags', 'metadata']);
/** Most events one diff compares per run. */
export const MAX_DIFF_EVENTS = 5000;
const TERMINAL = new Set(['completed', 'failed', 'cancelled']);
/**
 * A fork's principal ($10 its scopes, $17 its source's principal key): the owner's subject is the
 * source's, copied verbatim (identity.md §A.4) like the owner itself; the scopes are the fork's own.
 */
const FORK_PRINCIPAL = principalRef('$1', `(SELECT p."subject" FROM "run_principal" p WHERE p."tenant" = $1 AND p."key" = $17::bigint)`, '$10::text[]');

export interface RunDiff {
  a: string;
  b: string;
  divergedAtSeq: number | null;
  eventDiffs: Array<{ seq: number; op: 'added' | 'removed' | 'changed'; aEvent?: Record<string, unknown>; bEvent?: Record<string, unknown> }>;
  stateDiff: Record<string, unknown>;
  truncated?: boolean;
}

/**
 * Run fork (replay.md): a new run that inherits the source run's events before `fromSeq` as fixed
 * history (copied into its own log with the same sequences; the nodes completed in them keep their
 * recorded outputs) and executes the rest. The fork is an ordinary run row, claimed by a replica
 * like any other; its lineage is `metadata.fork`, and the principal who asked for it `forked_by`.
 *
 * A fork executes the chain its source recorded. One that would execute nodes of a chain no longer
 * installed, or of a version of it no longer installed, is refused (422 `workflow_not_installed`)
 * unless the operator allows it (OPENWOP_FORK_UNINSTALLED_CHAINS=allow): uninstalling a chain stops
 * its runs from being started again, by a fork as by POST /v1/runs. Every fork is audited (`run.forked`).
 */
@Injectable()
export class RunForkService {
  constructor(
    private readonly ds: DataSource,
    private readonly runs: RunsService,
    private readonly events: EventLogService,
    private readonly engine: RunEngineService,
    private readonly creation: RunCreationService,
    private readonly resolver: WorkflowResolver,
    private readonly audit: AuditLogService,
    @Inject(RUNS_SETTINGS) private readonly settings: RunsSettings,
  ) {}

  async fork(principal: Principal, sourceRunId: string, req: ForkRequest): Promise<{ answer: ForkAnswer; snapshot: RunSnapshot }> {
    const overlay = checkOverlay(req);
    if (req.mode === 'branch' && req.fromSeq === undefined) throw new ValidationError('A branch needs fromSeq (the branch point).', { field: 'fromSeq' });
    const fromSeq = req.fromSeq ?? 0;
    const source = await this.find(principal, sourceRunId);
    if (!source) throw new NotFoundError('No such run.');
    if (source.kind !== 'workflow' || !source.definition || !Array.isArray((source.definition as { nodes?: unknown }).nodes)) {
      throw new UnprocessableError('run_not_forkable', 'This run executed no workflow chain; there is nothing to re-execute.', { sourceRunId: source.id });
    }
    const scope: TenantScope = { tenant: source.tenant, workspace: source.workspace ?? undefined };
    // Authority never grows by forking: the fork acts with the scopes both the source and the caller hold.
    const caller = principal.scopes;
    const scopes = (source.scopes ?? []).filter((s) => caller.has(s));
    let configurable = source.configurable ?? {};
    const metadata: Record<string, unknown> = {};
    const meta = source.metadata ?? {};
    if (Array.isArray(meta.tags)) metadata.tags = meta.tags;
    if (meta.metadata && typeof meta.metadata === 'object') metadata.metadata = meta.metadata;
    if (typeof meta.callbackUrl === 'string') metadata.callbackUrl = meta.callbackUrl;

    if (overlay) {
      if (overlay.configurable) {
        configurable = this.creation.resolveBounds({ ...configurable, ...overlay.configurable });
        // A branch's overrides of the chain's deferred parameters (RFC 0124) are checked as at POST /v1/runs.
        checkDeferredOverrides({ definition: source.definition }, configurable);
      }
      if (overlay.tags) metadata.tags = overlay.tags;
      if (overlay.metadata) metadata.metadata = { ...((metadata.metadata as Record<string, unknown>) ?? {}), ...overlay.metadata };
    }
    const lineage: ForkLineage = { sourceRunId: source.id, mode: req.mode, fromSeq };
    metadata.fork = lineage;
    const trace = currentTraceContext();
    const forkId = await this.ds.transaction(async (m) => {
      const last = await this.lastSequence(m, source);
      if (fromSeq > last) {
        throw new UnprocessableError('fork_sequence_not_found', `The source run has no event ${fromSeq} (its last is ${last}).`, { sourceRunId: source.id, fromSeq, lastSequence: last });
      }
      // Fixed history: the events before fromSeq, in order.
      const prefix = fromSeq > 1
        ? await storedEvents(m, { tenant: source.tenant, streamId: source.id, beforeSequence: fromSeq })
        : [];
      const started = prefix.some((e) => e.type === 'run.started');
      const chain = await this.chainState(m, scope, source, prefix);
      const [{ id }] = (await m.query(
        `INSERT INTO "run" ("tenant", "workspace", "workspace_key", "principal", "kind", "status", "metadata", "workflow_id", "definition_key", "inputs", "configurable", "principal_key", "request_hash", "node_executions", "started_at", "trace_parent", "trace_state", "forked_by")
         VALUES ($1, $2, coalesce($2, ''), $3, 'workflow', $4, $5::jsonb, $6, $7::bigint, $8::jsonb, $9::jsonb, ${FORK_PRINCIPAL}, $11, $12, CASE WHEN $13::boolean THEN now() END, $14, $15, $16) RETURNING "id"`,
        [
          source.tenant,
          source.workspace,
          // Fork ownership (replay.md, RFC 0165 §B.4): the source's owner.
          source.principal,
          started ? 'running' : 'pending',
          JSON.stringify(metadata),
          source.workflowId,
          // The source's definition, stored once for both runs (same tenant): the fork refers to it.
          source.definitionKey,
          JSON.stringify(source.inputs ?? {}),
          JSON.stringify(configurable),
          scopes,
          canonicalJson({ fork: lineage, overlay: overlay ?? null }),
          prefix.filter((e) => e.type === 'node.started').length,
          started,
          trace ? formatTraceparent(trace) : null,
          trace?.tracestate ?? null,
          // Who asked: the fork is the source owner's run, acting with no scope its requester lacks.
          principal.principal,
          source.principalKey,
        ],
      )) as Array<{ id: string }>;
      if (prefix.length) await this.inherit(m, id, source, prefix);
      // Last: the tenant's audit chain stays locked only until the commit.
      await this.audit.record(m, {
        tenant: source.tenant,
        workspace: source.workspace ?? undefined,
        actor: auditActor(principal),
        action: 'run.forked',
        resource: { type: 'run', id },
        details: { sourceRunId: source.id, mode: req.mode, fromSeq, workflowId: source.workflowId, owner: source.principal, chain, scopesNotHeld: (source.scopes ?? []).filter((s) => !caller.has(s)) },
      });
      return id;
    });
    // The answer is the fork as created: read before the engine is told of it, so a fork that completes at
    // once is still answered as it was inserted (a 201 names no terminal status, as POST /v1/runs's).
    let snapshot: RunSnapshot;
    try {
      snapshot = await this.runs.get(scope, forkId);
    } finally {
      this.events.wake();
      this.engine.kick(forkId);
    }
    return { answer: { runId: forkId, sourceRunId: source.id, fromSeq, mode: req.mode, status: snapshot.status }, snapshot };
  }

  /**
   * Whether the chain the fork would execute is installed as its source ran it (see ForkChainState).
   * Anything but `installed` or `not-executed` is refused unless OPENWOP_FORK_UNINSTALLED_CHAINS
   * allows it. Read in the fork's transaction after a share lock on the tenant's chain catalog
   * version, which every install, update and uninstall of a chain pack updates (migration
   * 1764950000000): none can commit between this check and the fork's insert.
   */
  private async chainState(m: EntityManager, scope: TenantScope, source: RunEntity, prefix: StoredEvent[]): Promise<ForkChainState> {
    const settled = new Set(prefix.filter((e) => e.type === 'node.completed' || e.type === 'node.failed').map((e) => e.nodeId ?? ((e.payload ?? {}) as { nodeId?: string }).nodeId));
    const nodes = (source.definition as { nodes: Array<{ id: string }> }).nodes;
    if (nodes.every((n) => settled.has(n.id))) return 'not-executed';
    await m.query(`SELECT 1 FROM "chain_catalog_version" WHERE "tenant" = $1 FOR SHARE`, [source.tenant]);
    const workflowId = source.workflowId ?? '';
    const installed = (await this.resolver.current(scope, m)).chain(workflowId);
    let state: ForkChainState = 'uninstalled';
    if (installed) {
      const { definition } = parseDefinition(workflowId, installed.dag);
      // The stored definition is the parsed chain as JSON: compared as such.
      state = definition && canonicalJson(JSON.parse(JSON.stringify(definition))) === canonicalJson(source.definition) ? 'installed' : 'changed';
    }
    if (state === 'installed' || this.settings.forkUninstalledChains === 'allow') return state;
    const message =
      state === 'uninstalled'
        ? `The chain "${workflowId}" that run ${source.id} executed is no longer installed; a fork would execute it again.`
        : `The chain "${workflowId}" was changed since run ${source.id} executed it; the version that run executed is no longer installed.`;
    throw new UnprocessableError('workflow_not_installed', message, {
      sourceRunId: source.id,
      workflowId,
      reason: state,
      ...(installed?.version ? { installedVersion: installed.version } : {}),
      setting: 'OPENWOP_FORK_UNINSTALLED_CHAINS',
    });
  }

  /**
   * Copies the prefix into the fork's log (same sequences, types, node ids and payloads; new event
   * ids, causation links mapped onto them) and folds it into node rows: a node completed in it keeps
   * its recorded outputs, a node failed in it stays failed; every other node runs again.
   */
  private async inherit(m: EntityManager, forkId: string, source: RunEntity, prefix: StoredEvent[]): Promise<void> {
    // Through the event log's one insert, in order: a gap-free prefix takes the same sequences in the new stream.
    if (prefix.some((e, i) => Number(e.sequence) !== i + 1)) throw new InvariantViolation(`run ${source.id}'s log has a gap before sequence ${prefix.length + 1}`);
    const map = new Map(prefix.map((e) => [e.id, randomUUID()]));
    await this.events.appendMany(
      prefix.map((e) => ({
        scope: { tenant: source.tenant, workspace: source.workspace ?? undefined },
        streamId: forkId,
        eventId: map.get(e.id)!,
        createdAt: new Date(e.createdAt).toISOString(),
        type: e.type,
        payload: e.payload,
        correlationId: e.correlationId ?? undefined,
        causationId: e.causationId ? (map.get(e.causationId) ?? e.causationId) : undefined,
        nodeId: e.nodeId ?? undefined,
      })),
      { manager: m },
    );
    const nodes = new Map<string, { status: string; attempt: number; outputs: unknown; error: unknown }>();
    const known = new Set(((source.definition as { nodes: Array<{ id: string }> }).nodes ?? []).map((n) => n.id));
    const attempts = new Map<string, number>();
    for (const e of prefix) {
      const p = (e.payload ?? {}) as Record<string, unknown>;
      const nodeId = e.nodeId ?? (typeof p.nodeId === 'string' ? p.nodeId : undefined);
      if (!nodeId || !known.has(nodeId)) continue;
      if (e.type === 'node.started' && typeof p.attempt === 'number') attempts.set(nodeId, p.attempt);
      if (e.type === 'node.completed') nodes.set(nodeId, { status: 'completed', attempt: attempts.get(nodeId) ?? 0, outputs: p.outputs ?? {}, error: null });
      if (e.type === 'node.failed') nodes.set(nodeId, { status: 'failed', attempt: attempts.get(nodeId) ?? 0, outputs: null, error: p.error ?? { code: 'node_failed', message: 'The node failed.' } });
    }
    for (const [nodeId, n] of nodes) {
      await m.query(
        `INSERT INTO "run_node" ("run_id", "node_id", "status", "attempt", "outputs", "error", "updated_at") VALUES ($1, $2, $3, $4, $5::jsonb, $6::jsonb, now())`,
        [forkId, nodeId, n.status, n.attempt, n.outputs === null ? null : JSON.stringify(n.outputs), n.error === null ? null : JSON.stringify(n.error)],
      );
    }
  }

  /**
   * RunDiffResponse (RFC 0054): the two runs' logs compared sequence by sequence on what a replay
   * reproduces (type, node and payload; event ids, run ids and timestamps always differ), and
   * their states (status, variables, outputs, error). A pure function of the two logs.
   */
  async diff(scope: TenantScope, runId: string, againstId: string, clockFields: readonly string[] = []): Promise<RunDiff> {
    const a = await this.find(scope, runId);
    const b = a ? await this.find(scope, againstId) : undefined;
    if (!a || !b) throw new NotFoundError('No such run.');
    const [ea, eb] = await Promise.all([this.readLog(a), this.readLog(b)]);
    // `clockFields`: payload keys left out of the comparison (major 2's run-scoped clock fields, e.g. durationMs).
    const compared = (p: unknown) => (clockFields.length && p && typeof p === 'object' && !Array.isArray(p) ? Object.fromEntries(Object.entries(p).filter(([k]) => !clockFields.includes(k))) : (p ?? null));
    const key = (e: StoredEvent) => canonicalJson({ type: e.type, nodeId: e.nodeId ?? null, payload: compared(e.payload) });
    const bySeq = (l: StoredEvent[]) => new Map(l.map((e) => [Number(e.sequence), e]));
    const ma = bySeq(ea.events);
    const mb = bySeq(eb.events);
    const seqs = [...new Set([...ma.keys(), ...mb.keys()])].sort((x, y) => x - y);
    const eventDiffs: RunDiff['eventDiffs'] = [];
    const view = (e: StoredEvent) => ({ eventId: e.id, runId: e.streamId, sequence: Number(e.sequence), type: e.type, ...(e.nodeId ? { nodeId: e.nodeId } : {}), payload: e.payload, timestamp: new Date(e.createdAt).toISOString() });
    for (const seq of seqs) {
      const x = ma.get(seq);
      const y = mb.get(seq);
      if (x && !y) eventDiffs.push({ seq, op: 'removed', aEvent: view(x) });
      else if (!x && y) eventDiffs.push({ seq, op: 'added', bEvent: view(y) });
      else if (x && y && key(x) !== key(y)) eventDiffs.push({ seq, op: 'changed', aEvent: view(x), bEvent: view(y) });
    }
    const stateDiff: Record<string, unknown> = {};
    const state = (r: RunEntity) => ({ status: r.status, variables: { inputs: r.inputs ?? {} }, outputs: r.outputs ?? null, error: r.error ?? null });
    const sa = state(a);
    const sb = state(b);
    for (const k of Object.keys(sa) as Array<keyof typeof sa>) {
      if (canonicalJson(sa[k]) !== canonicalJson(sb[k])) stateDiff[k] = { a: sa[k], b: sb[k] };
    }
    const truncated = ea.truncated || eb.truncated || !TERMINAL.has(a.status) || !TERMINAL.has(b.status);
    return { a: a.id, b: b.id, divergedAtSeq: eventDiffs.length ? eventDiffs[0].seq : null, eventDiffs, stateDiff, ...(truncated ? { truncated: true } : {}) };
  }

  private async readLog(r: RunEntity): Promise<{ events: StoredEvent[]; truncated: boolean }> {
    const rows = await storedEvents(this.ds, { tenant: r.tenant, streamId: r.id, limit: MAX_DIFF_EVENTS + 1 });
    return { events: rows.slice(0, MAX_DIFF_EVENTS), truncated: rows.length > MAX_DIFF_EVENTS };
  }

  private async lastSequence(m: EntityManager, r: RunEntity): Promise<number> {
    const rows = (await m.query(`SELECT "last_sequence" FROM "event_stream" WHERE "tenant" = $1 AND "stream_id" = $2`, [r.tenant, r.id])) as Array<{ last_sequence: string }>;
    return rows.length ? Number(rows[0].last_sequence) : 0;
  }

  /** The caller's run (its tenant, and workspace when the caller has one); never another tenant's. */
  private async find(scope: TenantScope, runId: string): Promise<RunEntity | undefined> {
    if (!UUID.test(runId)) return undefined;
    return (await this.ds.getRepository(RunEntity).findOne({ where: inScope(scope, { id: runId }) })) ?? undefined;
  }
}

/**
 * The overlay of a fork: `replay` takes none (an overlay would break determinism: any non-empty
 * one is 400); `branch` takes RunOptions (`configurable`, `tags`, `metadata`), anything else is 400.
 */
function checkOverlay(req: ForkRequest): { configurable?: Record<string, unknown>; tags?: string[]; metadata?: Record<string, unknown> } | undefined {
  const o = req.runOptionsOverlay;
  if (o === undefined) return undefined;
  const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
  if (!isObject(o)) throw new ValidationError('runOptionsOverlay must be an object.', { field: 'runOptionsOverlay' });
  if (req.mode === 'replay') {
    if (Object.keys(o).length) throw new ValidationError('A replay takes no runOptionsOverlay (it must reproduce the source run); use mode "branch".', { field: 'runOptionsOverlay' });
    return undefined;
  }
  const unknown = Object.keys(o).filter((k) => !OVERLAY_KEYS.has(k));
  if (unknown.length) throw new ValidationError('runOptionsOverlay takes configurable, tags and metadata only.', { field: 'runOptionsOverlay', unknown });
  if (o.configurable !== undefined && !isObject(o.configurable)) throw new ValidationError('runOptionsOverlay.configurable must be an object.', { field: 'runOptionsOverlay.configurable' });
  if (o.metadata !== undefined && !isObject(o.metadata)) throw new ValidationError('runOptionsOverlay.metadata must be an object.', { field: 'runOptionsOverlay.metadata' });
  if (o.tags !== undefined && (!Array.isArray(o.tags) || o.tags.length > 100 || !o.tags.every((t) => typeof t === 'string' && t.length >= 1 && t.length <= 256))) {
    throw new ValidationError('runOptionsOverlay.tags must be at most 100 strings of 1-256 characters.', { field: 'runOptionsOverlay.tags' });
  }
  if (o.configurable && (o.configurable as Record<string, unknown>).mockProvider !== undefined) {
    throw new ValidationError('runOptionsOverlay.configurable.mockProvider is not served by this host.', { field: 'runOptionsOverlay.configurable.mockProvider' });
  }
  return { configurable: o.configurable as Record<string, unknown> | undefined, tags: o.tags as string[] | undefined, metadata: o.metadata as Record<string, unknown> | undefined };
}
