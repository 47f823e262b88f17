/**
 * The run model's constants, typed from the generated API types and free of the HTTP client (so pure
 * code such as the run view's state derivation can use them, and be unit tested, without a browser).
 */
import type { components, paths } from '../../../generated/openapi';

export type RunSnapshot = components['schemas']['RunSnapshot'];
export type RunEvent = components['schemas']['RunEvent'];
export type RunStatus = RunSnapshot['status'];
export type RunDefinition = paths['/v1/runs/{runId}/definition']['get']['responses'][200]['content']['application/json'];
export type DagNode = RunDefinition['nodes'][number];
export type DagEdge = RunDefinition['edges'][number];

/** Every status of the generated enum, in the order of the protocol's lifecycle. */
const STATUS_ORDER: Record<RunStatus, true> = {
  pending: true,
  running: true,
  paused: true,
  'waiting-approval': true,
  'waiting-input': true,
  'waiting-external': true,
  completed: true,
  failed: true,
  cancelling: true,
  cancelled: true,
};
export const RUN_STATUSES = Object.keys(STATUS_ORDER) as RunStatus[];
export const TERMINAL: ReadonlySet<string> = new Set<RunStatus>(['completed', 'failed', 'cancelled']);
export const TERMINAL_EVENTS: ReadonlySet<string> = new Set<RunEvent['type']>(['run.completed', 'run.failed', 'run.cancelled']);
