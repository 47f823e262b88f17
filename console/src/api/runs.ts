/**
 * The run engine's API (`/v1/runs`) through the generated client: list, read, start, pause, resume,
 * fork, cancel and the
 * chain a run executes. The live event stream is in `run-events.ts`.
 */
import { api, call } from './client';
import type { Schemas } from './client';
import { Page, pageQuery } from './paging';
import type { RunDefinition, RunSnapshot, RunStatus } from './run-model';

export type { DagEdge, DagNode, RunDefinition, RunEvent, RunSnapshot, RunStatus } from './run-model';
export type CreateRunBody = Schemas['CreateRunBody'];

export { RUN_STATUSES, TERMINAL, TERMINAL_EVENTS } from './run-model';

/** Runs are listed ten at a time: a page fits beside the run view. */
export const RUNS_PAGE_SIZE = 10;

export async function listRuns(opts: { status?: RunStatus; cursor?: string }): Promise<Page<RunSnapshot>> {
  const r = await call(api.GET('/v1/runs', { params: { query: { ...pageQuery(opts.cursor, RUNS_PAGE_SIZE), ...(opts.status ? { status: opts.status } : {}) } } }));
  return { items: r.runs, nextCursor: r.nextCursor };
}

export function getRun(runId: string): Promise<RunSnapshot> {
  return call(api.GET('/v1/runs/{runId}', { params: { path: { runId } } }));
}

export function startRun(body: CreateRunBody): Promise<RunSnapshot> {
  return call(api.POST('/v1/runs', { body }));
}

/** `POST /v1/runs/{runId}:pause`: nodes in flight finish (`drain-current-node`), nothing new starts. */
export function pauseRun(runId: string): Promise<{ runId: string; status: string }> {
  return call(api.POST('/v1/runs/{runId}:pause', { params: { path: { runId } }, body: { reason: 'paused from the operator console', drainPolicy: 'drain-current-node' } }));
}

/** `POST /v1/runs/{runId}:resume`: the run continues from its recorded node states. */
export function resumeRun(runId: string): Promise<{ runId: string; status: string }> {
  // The generated type marks the defaulted drainPolicy required; `:resume` takes none (400 if sent).
  const body = { reason: 'resumed from the operator console' } as Schemas['RunControlBody'];
  return call(api.POST('/v1/runs/{runId}:resume', { params: { path: { runId } }, body }));
}

/** `POST /v1/runs/{runId}:fork` from the first event: `replay` re-executes deterministically, `branch` runs it anew. */
export function forkRun(runId: string, mode: 'replay' | 'branch'): Promise<{ runId: string; sourceRunId: string; mode: string }> {
  return call(api.POST('/v1/runs/{runId}:fork', { params: { path: { runId } }, body: { fromSeq: 0, mode } })) as Promise<{ runId: string; sourceRunId: string; mode: string }>;
}

/** What a node stored with `ctx.artifacts.put` (the snapshot's `artifacts`, a host extension of RunSnapshot). */
export interface RunArtifact {
  artifactId: string;
  name: string;
  contentType: string;
  sizeBytes: number;
  nodeId: string;
  createdAt: string;
}

export function runArtifacts(run: RunSnapshot): RunArtifact[] {
  const list = (run as { artifacts?: unknown }).artifacts;
  return Array.isArray(list) ? (list as RunArtifact[]) : [];
}

/** The bytes of an artifact (authenticated like every call, so not a plain link). */
export async function downloadArtifact(runId: string, artifactId: string): Promise<Blob> {
  return call(api.GET('/v1/runs/{runId}/artifacts/{artifactId}', { params: { path: { runId, artifactId } }, parseAs: 'blob' })) as Promise<Blob>;
}

export function cancelRun(runId: string): Promise<RunSnapshot> {
  return call(api.POST('/v1/runs/{runId}/cancel', { params: { path: { runId } }, body: { reason: 'cancelled from the operator console' } }));
}

/**
 * The chain a run executes (its nodes and edges as stored when it was created). Once the host serves the
 * protocol's `GET /v1/workflows/{workflowId}`, the installed definition can be read there too; the run's
 * own copy stays the one to draw, as it is what this run executes even after the pack changes.
 */
export function getRunDefinition(runId: string): Promise<RunDefinition> {
  return call(api.GET('/v1/runs/{runId}/definition', { params: { path: { runId } } }));
}
