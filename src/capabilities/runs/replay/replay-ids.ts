import { DomainError } from '../../../platform/errors/domain-error';
import { requestMajor } from '../../../platform/http/protocol-version';

/**
 * Run ids the replay operations take outside the path, under protocol major 2 (identity.md §5,
 * docs/versions.md): `GET /runs/{runId}:diff?against=` names its second run tenant-bound
 * (`<tenant>/<id>`, `~2F` and `%2F` accepted); a bare id resolves under the caller's tenant through
 * the overlap; another tenant is `403 id_tenant_mismatch`. Major 1 takes the id as it is.
 */
export function unboundRunId(req: unknown, tenant: string, id: string): string {
  if (requestMajor(req) !== 2) return id;
  const decoded = id.replace(/~([0-9A-Fa-f]{2})/g, (_, h: string) => String.fromCharCode(parseInt(h, 16)));
  const slash = decoded.lastIndexOf('/');
  if (slash < 0) return id;
  if (decoded.slice(0, slash) !== tenant) throw new DomainError('id_tenant_mismatch', 403, 'The run id is bound to another tenant.');
  return decoded.slice(slash + 1);
}

/**
 * Event sequences: the log numbers a run's events from 1 (what `/v1` answers); major 2 numbers them
 * from 0 (events.md §Poll). A replay operation at major 2 takes and answers sequences in its numbering.
 */
const V2_SEQUENCE_OFFSET = 1;

type DiffLike = { a: string; b: string; divergedAtSeq: number | null; eventDiffs: Array<{ seq: number; aEvent?: Record<string, unknown>; bEvent?: Record<string, unknown> }> };

/** A diff answer under major 2: `a` and `b` name the runs as the caller's tenant-bound ids, sequences counted from 0. */
export function diffIds<T extends DiffLike>(req: unknown, tenant: string, diff: T): T {
  if (requestMajor(req) !== 2) return diff;
  const event = (e?: Record<string, unknown>) => (e && typeof e.sequence === 'number' ? { ...e, sequence: e.sequence - V2_SEQUENCE_OFFSET, runId: `${tenant}/${String(e.runId)}` } : e);
  return {
    ...diff,
    a: `${tenant}/${diff.a}`,
    b: `${tenant}/${diff.b}`,
    divergedAtSeq: diff.divergedAtSeq === null ? null : diff.divergedAtSeq - V2_SEQUENCE_OFFSET,
    eventDiffs: diff.eventDiffs.map((d) => ({ ...d, seq: d.seq - V2_SEQUENCE_OFFSET, ...(d.aEvent ? { aEvent: event(d.aEvent) } : {}), ...(d.bEvent ? { bEvent: event(d.bEvent) } : {}) })),
  };
}

/** A fork request's `fromSeq` as the log numbers it (a major-2 `fromSeq` counts from 0). */
export function forkBodyOf<T extends { fromSeq?: number }>(req: unknown, body: T): T {
  return requestMajor(req) === 2 && typeof body?.fromSeq === 'number' ? { ...body, fromSeq: body.fromSeq + V2_SEQUENCE_OFFSET } : body;
}

/** A fork answer's `fromSeq` in the request's numbering. */
export function forkAnswerOf(req: unknown, answer: Record<string, unknown>): Record<string, unknown> {
  return requestMajor(req) === 2 && typeof answer.fromSeq === 'number' ? { ...answer, fromSeq: Math.max(0, answer.fromSeq - V2_SEQUENCE_OFFSET) } : answer;
}

/**
 * Payload fields a major-2 diff leaves out of its comparison: `eventId`, `runId`, `timestamp` "and
 * other run-scoped fields" (runs.md §Diff and ancestry), here the wall-clock `durationMs` two runs
 * of one workflow never share. Major 1 keeps comparing it (a replay differs from its source where
 * the source observed the clock).
 */
export function diffClockFields(req: unknown): readonly string[] {
  return requestMajor(req) === 2 ? ['durationMs'] : [];
}
