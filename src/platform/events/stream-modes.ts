import { DomainError } from '../errors/domain-error';

/** The stream modes of `GET /v1/runs/{runId}/events` (stream-modes.md), in the order `details.supported` lists them. */
export const STREAM_MODES = ['values', 'updates', 'messages', 'debug'] as const;
export type StreamMode = (typeof STREAM_MODES)[number];

/** The most `bufferMs` a subscriber may ask for (stream-modes.md §Aggregation hint). */
export const MAX_BUFFER_MS = 5000;

/**
 * The canonical event types `updates` admits: terminal node transitions, suspension transitions,
 * run transitions and artifact production (stream-modes.md §Mode-to-event mapping). `node.started`,
 * `cap.breached`, log lines and vendor events are `debug` only.
 */
const UPDATES: ReadonlySet<string> = new Set([
  'run.started', 'run.completed', 'run.failed', 'run.cancelled', 'run.paused', 'run.resumed', 'run.annotated',
  'workspace.updated',
  'node.completed', 'node.failed', 'node.skipped', 'node.cancelled', 'node.suspended', 'node.resumed', 'node.dispatched',
  'approval.requested', 'approval.received',
  'clarification.requested', 'clarification.resolved',
  'interrupt.requested', 'interrupt.resolved',
  'artifact.created',
  'eval.started', 'eval.scored', 'eval.completed',
  'deployment.promoted', 'deployment.rolledBack', 'deployment.canaryAdjusted', 'deployment.stateChanged',
]);

/** `values` synthesizes a snapshot after every `updates`-tier transition and after `node.started`. */
const VALUES_TRIGGERS: ReadonlySet<string> = new Set([...UPDATES, 'node.started']);

const MESSAGES: ReadonlySet<string> = new Set(['ai.message.chunk']);

/** Events that end a buffering window at once (stream-modes.md §Aggregation hint, forced-flush triggers). */
export const FORCE_FLUSH_EVENTS: ReadonlySet<string> = new Set(['run.completed', 'run.failed', 'run.cancelled', 'node.suspended']);

export class UnsupportedStreamModeError extends DomainError {
  constructor(message: string) {
    super('unsupported_stream_mode', 400, message, { supported: [...STREAM_MODES] });
  }
}

/**
 * Parses `?streamMode=` (default `updates`): one mode, or a comma-separated union of modes;
 * `values` owns its stream and combines with nothing. Anything else is 400 `unsupported_stream_mode`
 * with the individual mode names in `details.supported`.
 */
export function parseStreamModes(raw: unknown): StreamMode[] {
  if (raw === undefined) return ['updates'];
  if (typeof raw !== 'string') throw new UnsupportedStreamModeError('Send one streamMode parameter (a comma-separated list combines modes).');
  const names = raw.split(',').map((s) => s.trim());
  const modes: StreamMode[] = [];
  for (const n of names) {
    if (!(STREAM_MODES as readonly string[]).includes(n)) {
      throw new UnsupportedStreamModeError(n ? `Server does not implement streamMode='${n}'.` : 'streamMode has an empty entry.');
    }
    if (!modes.includes(n as StreamMode)) modes.push(n as StreamMode);
  }
  if (modes.includes('values') && modes.length > 1) throw new UnsupportedStreamModeError("streamMode 'values' cannot be combined with another mode.");
  return modes;
}

/** Whether an event passes the union of the modes' filters (`values` is handled by the caller). */
export function admits(modes: readonly StreamMode[], type: string): boolean {
  for (const m of modes) {
    if (m === 'debug') return true;
    if (m === 'updates' && UPDATES.has(type)) return true;
    if (m === 'messages' && MESSAGES.has(type)) return true;
  }
  return false;
}

/** Whether an event makes `values` emit a fresh snapshot. */
export function triggersSnapshot(type: string): boolean {
  return VALUES_TRIGGERS.has(type);
}
