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

/** A diff answer under major 2: `a` and `b` name the runs as the caller's tenant-bound ids. */
export function diffIds<T extends { a: string; b: string }>(req: unknown, tenant: string, diff: T): T {
  return requestMajor(req) === 2 ? { ...diff, a: `${tenant}/${diff.a}`, b: `${tenant}/${diff.b}` } : diff;
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
