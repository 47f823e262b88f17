import type { EntityManager } from 'typeorm';
import { NotFoundError } from '../../platform/errors/domain-error';
import { RunEntity } from './run.entity';
import type { Principal, TenantScope } from '../../platform/identity/principal';
import { UUID } from '../../platform/ids';
import type { RunArtifactRef } from '@openwop-host/plugin-sdk';
import type { InterruptsService, InterruptView } from './interrupts/interrupts.service';
import { RunNodeEntity } from './run-node.entity';
import { inScope, scopeCondition } from '../../platform/tenancy/workspace-scope';
import { KeysetColumn, KeysetOptions, keysetRows, keysetSql } from '../../platform/pagination/keyset';
import type { PageRequest } from '../../platform/pagination/page-query';
import { ChildRunView, linkageOf, runVariables } from './run-variables';
import { definitionSelect } from './run-definition.entity';
import { preparedStatement, runPrepared } from '../../platform/database/prepared-statement';

/**
 * The wire shapes of a run (RunSnapshot, its definition, a page of runs) and how they are read from
 * its rows: shared by the runs service, run creation, run control and the fork service.
 */

export const RUN_STATUSES = ['pending', 'running', 'paused', 'waiting-approval', 'waiting-input', 'waiting-external', 'completed', 'failed', 'cancelling', 'cancelled'] as const;
export const TERMINAL = new Set(['completed', 'failed', 'cancelled']);

/**
 * The event-log era of a run (run-snapshot.schema.json `eventLogSchemaVersion`): the contract its
 * event log follows. Every run this host has written follows one contract, so each carries `3`, the
 * value the protocol has new runs stamped with; a client that finds no value treats a run as legacy.
 */
export const EVENT_LOG_SCHEMA_VERSION = 3;

/** The wire RunSnapshot (run-snapshot.schema.json), plus `outputs` on a completed run. */
export interface RunSnapshot {
  runId: string;
  workflowId: string;
  status: string;
  /** RFC 0151 §D: the rollup of the run's compensation plan (`none` without one; compensation/). */
  compensationStatus: string;
  /** The authenticated principal who created the run is `owner.principal` (the v1 owner is closed: it has no `subject`). */
  owner: { tenant: string; workspace?: string; principal?: string };
  eventLogSchemaVersion: number;
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
  /** What the run's nodes stored with `ctx.artifacts.put` (served by GET /v1/runs/{runId}/artifacts/{artifactId}). */
  artifacts?: RunArtifactRef[];
  /**
   * On a run created by `POST /v1/runs/{runId}:fork`: its source, mode and branch point, and the
   * principal who asked for it (`requestedBy`; the run's owner is the source's). The v1 RunSnapshot
   * is open at its top level; `owner` is closed, so the requester is not put there.
   */
  fork?: { sourceRunId: string; mode: string; fromSeq: number; requestedBy?: string };
  /** On a child run (`core.subWorkflow`, a `workflow` tool): the run and node that started it. */
  parentRunId?: string;
  parentNodeId?: string;
  /** On a run that started child runs: each child, oldest first (interrupt-profiles.md §openwop-interrupt-cascade-cancel). */
  childRuns?: ChildRunView[];
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

export interface RunPage {
  runs: RunSnapshot[];
  nextCursor: string | null;
}

/** The tenant's run (and workspace's, when the caller has one); never another tenant's. */
export async function findRun(db: EntityManager, scope: TenantScope, runId: string): Promise<RunEntity | undefined> {
  if (!UUID.test(runId)) return undefined;
  return (await db.getRepository(RunEntity).findOne({ where: inScope(scope, { id: runId }) })) ?? undefined;
}

/** The columns of a run's row a snapshot shows (and its interrupt reads), by property. */
type SnapshotRun = Pick<
  RunEntity,
  'id' | 'tenant' | 'workspace' | 'principal' | 'kind' | 'status' | 'workflowId' | 'definition' | 'inputs' | 'configurable' | 'metadata' | 'outputs' | 'error' | 'currentNodeId' | 'startedAt' | 'completedAt' | 'createdAt' | 'nodeExecutions' | 'costUsd' | 'forkedBy'
>;

/** The columns of a run's row (`r`) a snapshot shows, named as SnapshotRun's properties (not the stored create answer, the lease or the starter's scopes). */
const SNAPSHOT_COLUMNS = `r."id", r."tenant", r."workspace", r."principal", r."kind", r."status", r."workflow_id" AS "workflowId",
     r."inputs", r."configurable", r."metadata", r."outputs", r."error", r."current_node_id" AS "currentNodeId",
     r."started_at" AS "startedAt", r."completed_at" AS "completedAt", r."created_at" AS "createdAt",
     r."node_executions" AS "nodeExecutions", r."cost_usd" AS "costUsd", r."forked_by" AS "forkedBy"`;

/**
 * A run's whole snapshot in one statement, prepared once per connection: the row's columns a snapshot
 * shows (not the stored create answer, the lease or the starter's scopes), its stored definition, and
 * as subqueries through the row: its nodes (in the order a read of them by run id gives), its
 * compensation plan's status, its artifacts and child runs (oldest first), and the last sequence of its
 * event stream (the ETag's; 0 when it has none). Only a row of the caller's scope brings anything.
 */
const READ_SNAPSHOT = preparedStatement(
  'run_snapshot_read',
  `SELECT ${SNAPSHOT_COLUMNS},
     (${definitionSelect('r')}) AS "definition",
     (SELECT coalesce(json_agg(json_build_object('nodeId', n."node_id", 'status', n."status", 'attempt', n."attempt", 'outputs', n."outputs", 'error', n."error")), '[]'::json)
        FROM "run_node" n WHERE n."run_id" = r."id") AS "snapshot_nodes",
     (SELECT c."status" FROM "run_compensation" c WHERE c."tenant" = r."tenant" AND c."run_id" = r."id") AS "snapshot_compensation",
     (SELECT coalesce(json_agg(json_build_object('artifactId', a."id", 'name', a."name", 'contentType', a."content_type", 'sizeBytes', a."size_bytes", 'nodeId', a."node_id", 'createdAt', a."created_at") ORDER BY a."created_at", a."id"), '[]'::json)
        FROM "run_artifact" a WHERE a."tenant" = r."tenant" AND a."run_id" = r."id") AS "snapshot_artifacts",
     -- run_parent_idx (migration 1765000180000): the predicate \`metadata ? 'parentRunId'\` is its partial index's (as childRunsOf).
     (SELECT coalesce(json_agg(json_build_object('runId', k."id", 'workflowId', k."workflow_id", 'status', k."status", 'parentNodeId', k."metadata"->>'parentNodeId') ORDER BY k."created_at", k."id"), '[]'::json)
        FROM "run" k WHERE k."tenant" = r."tenant" AND k."metadata" ? 'parentRunId' AND k."metadata"->>'parentRunId' = r."id"::text AND k."kind" = 'workflow') AS "snapshot_children",
     (SELECT s."last_sequence" FROM "event_stream" s WHERE s."tenant" = r."tenant" AND s."stream_id" = r."id"::text) AS "snapshot_sequence"
   FROM "run" r
   WHERE r."id" = $1 AND r."tenant" = $2 AND ($3::text IS NULL OR r."workspace" = $3)`,
);

interface SnapshotRow extends SnapshotRun {
  snapshot_nodes: Array<Pick<RunNodeEntity, 'nodeId' | 'status' | 'attempt' | 'outputs' | 'error'>>;
  snapshot_compensation: string | null;
  snapshot_artifacts: Array<Omit<RunArtifactRef, 'createdAt'> & { createdAt: string }>;
  snapshot_children: Array<{ runId: string; workflowId: string | null; status: string; parentNodeId: string | null }>;
  snapshot_sequence: string | null;
}

/**
 * The RunSnapshot of a run of the caller's scope (unknown and foreign ids are 404), with its nodes,
 * its interrupt and (`artifacts`) what its nodes stored; `major`: the protocol major it is read under.
 */
export async function readRunSnapshot(db: EntityManager, interrupts: InterruptsService, scope: TenantScope, runId: string, opts: { artifacts?: boolean; major?: number } = {}): Promise<RunSnapshot> {
  return (await readRunSnapshotAndSequence(db, interrupts, scope, runId, opts)).snapshot;
}

/**
 * The same, and the last sequence of the run's event stream, both as one statement saw them (the
 * snapshot's ETag: a later event gives a later sequence). The row and everything the snapshot shows
 * of it are one statement (READ_SNAPSHOT); a run waiting on an interrupt reads it after. Inside a
 * caller's transaction the statement runs on its connection.
 */
export async function readRunSnapshotAndSequence(
  db: EntityManager,
  interrupts: InterruptsService,
  scope: TenantScope,
  runId: string,
  opts: { artifacts?: boolean; major?: number },
): Promise<{ snapshot: RunSnapshot; lastSequence: number }> {
  if (!UUID.test(runId)) throw new NotFoundError('No such run.');
  const [row] = await runPrepared<SnapshotRow>(db.queryRunner ? db : db.connection, READ_SNAPSHOT, [runId, scope.tenant, scope.workspace ?? null]);
  if (!row) throw new NotFoundError('No such run.');
  const { snapshot_nodes: nodes, snapshot_compensation: compensation, snapshot_artifacts: artifacts, snapshot_children: children, snapshot_sequence: sequence, ...run } = row;
  const workflow = run.kind === 'workflow';
  const s = snapshot(run, workflow ? nodes : []);
  s.compensationStatus = compensation ?? 'none';
  // `major`: the protocol major it is read under (an interrupt's token scheme and callback route differ).
  const interrupt = workflow ? await interrupts.forSnapshot(run, opts.major ?? 1) : undefined;
  if (interrupt) s.interrupt = interrupt;
  if (opts.artifacts && workflow) s.artifacts = artifacts.map((a) => ({ ...a, sizeBytes: Number(a.sizeBytes), createdAt: new Date(a.createdAt).toISOString() }));
  if (workflow) {
    const views: ChildRunView[] = children.map((c) => ({ runId: c.runId, workflowId: c.workflowId ?? '', status: c.status, ...(c.parentNodeId ? { parentNodeId: c.parentNodeId } : {}) }));
    if (views.length) {
      s.childRuns = views;
      // A parent whose node waits on a child that waits for a human waits for that human too: it
      // reads the child's waiting status (the child's interrupt is resolved on the child run).
      const waiting = s.status === 'running' ? views.find((c) => c.status.startsWith('waiting-')) : undefined;
      if (waiting) s.status = waiting.status;
    }
  }
  return { snapshot: s, lastSequence: sequence === null ? 0 : Number(sequence) };
}

/** The snapshot of a workflow run as `create` inserts it (pending, nothing run yet): what a read of the new row would answer. */
export function createdSnapshot(
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

export function snapshot(r: SnapshotRun, nodes: Array<Pick<RunNodeEntity, 'nodeId' | 'status' | 'attempt' | 'outputs' | 'error'>>): RunSnapshot {
  const owner: RunSnapshot['owner'] = { tenant: r.tenant };
  if (r.workspace) owner.workspace = r.workspace;
  if (r.principal) owner.principal = r.principal;
  // A run keeps the era it was created in (a seeded era-2 log records 2; every run this host writes, 3).
  const era = (r.metadata ?? {}).eventLogSchemaVersion;
  const s: RunSnapshot = { runId: r.id, workflowId: r.workflowId ?? `host.${r.kind}`, status: r.status, compensationStatus: 'none', owner, eventLogSchemaVersion: typeof era === 'number' ? era : EVENT_LOG_SCHEMA_VERSION };
  if (r.currentNodeId) s.currentNodeId = r.currentNodeId;
  if (r.startedAt) s.startedAt = r.startedAt.toISOString();
  else if (r.kind !== 'workflow') s.startedAt = r.createdAt.toISOString();
  if (r.completedAt) s.completedAt = r.completedAt.toISOString();
  if (r.kind === 'workflow') {
    s.nodeStates = Object.fromEntries(
      nodes.map((n) => [n.nodeId, { status: n.status, attempt: n.attempt, ...(n.error ? { error: n.error } : {}) }]),
    );
    s.variables = runVariables(r, nodes);
    s.configurable = r.configurable ?? {};
    const meta = r.metadata ?? {};
    if (Array.isArray(meta.tags)) s.tags = meta.tags as string[];
    if (meta.metadata && typeof meta.metadata === 'object') s.metadata = meta.metadata as Record<string, unknown>;
    if (r.outputs) s.outputs = r.outputs;
    if (r.error) s.error = r.error;
    const fork = meta.fork as { sourceRunId?: unknown; mode?: unknown; fromSeq?: unknown } | undefined;
    if (fork && typeof fork.sourceRunId === 'string' && typeof fork.mode === 'string' && typeof fork.fromSeq === 'number') {
      s.fork = { sourceRunId: fork.sourceRunId, mode: fork.mode, fromSeq: fork.fromSeq, ...(r.forkedBy ? { requestedBy: r.forkedBy } : {}) };
    }
    s.metrics = { nodeExecutions: r.nodeExecutions, openwopCost: { usd: r.costUsd } };
    const link = linkageOf(r);
    if (link) Object.assign(s, link);
  }
  return s;
}

/** A list's sort: newest first, ties by id (run_tenant_created_idx and the status indexes end in both). */
const PAGE_KEYS: KeysetColumn[] = [{ column: 'r."created_at"', type: 'timestamptz' }, { column: 'r."id"', type: 'uuid' }];

interface PageRow extends Omit<SnapshotRun, 'definition'> {
  definition_key: string | null;
  /** The row is its definition's first on the page: only it carries the definition. */
  page_first: boolean;
  definition: Record<string, unknown> | null;
  page_compensation: string | null;
}

/**
 * A page of the caller's runs (newest first, `status` and `workflowId` filters, keyset cursor), in one
 * statement: the rows of the page through the tenant's index for the filters (a page and one row more),
 * each with its compensation plan's status, and the stored definition once per definition on the page
 * (on the first of its runs: a page's runs mostly share a few definitions, and a chain's can be
 * kilobytes). Each item is the snapshot of the row without its nodes, as before: the same JSON.
 */
export async function readRunPage(db: { query(sql: string, params: unknown[]): Promise<unknown> }, scope: TenantScope, q: PageRequest & { status?: string; workflowId?: string }): Promise<RunPage> {
  const params: unknown[] = [];
  const where = [scopeCondition(scope, params, { alias: 'r' })];
  if (q.status !== undefined) {
    params.push(q.status);
    where.push(`r."status" = $${params.length}`);
  }
  if (q.workflowId !== undefined) {
    params.push(q.workflowId);
    where.push(`r."workflow_id" = $${params.length}`);
  }
  const opts: KeysetOptions = { keys: PAGE_KEYS, direction: 'DESC', binding: { list: 'runs', tenant: scope.tenant, workspace: scope.workspace, filters: { status: q.status, workflowId: q.workflowId } } };
  const keyset = keysetSql(q, opts, params);
  if (keyset.after) where.push(keyset.after);
  // The page (a Limit over the index), then a window over its rows alone: which is its definition's first.
  const rows = (await db.query(
    `SELECT p.*, CASE WHEN p."page_first" THEN (${definitionSelect('p')}) END AS "definition",
       (SELECT c."status" FROM "run_compensation" c WHERE c."tenant" = p."tenant" AND c."run_id" = p."id") AS "page_compensation"
     FROM (
       SELECT k.*, row_number() OVER (PARTITION BY k."definition_key" ORDER BY k."createdAt" DESC, k."id" DESC) = 1 AS "page_first"
       FROM (SELECT ${SNAPSHOT_COLUMNS}, r."definition_key", ${keyset.select} FROM "run" r WHERE ${where.join(' AND ')} ORDER BY ${keyset.orderBy} LIMIT ${keyset.limit}) k
     ) p
     ORDER BY p."createdAt" DESC, p."id" DESC`,
    params,
  )) as PageRow[];
  const page = keysetRows(rows, keyset, opts);
  const definitions = new Map<string, Record<string, unknown> | null>();
  for (const r of page.items) if (r.page_first && r.definition_key !== null) definitions.set(String(r.definition_key), r.definition);
  return {
    runs: page.items.map((r) => {
      const run = { ...r, definition: r.definition_key === null ? null : (definitions.get(String(r.definition_key)) ?? null) } as SnapshotRun;
      return { ...snapshot(run, []), compensationStatus: r.page_compensation ?? 'none' };
    }),
    nextCursor: page.nextCursor,
  };
}
