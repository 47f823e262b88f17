/**
 * PostgreSQL's `jsonb` key order, applied to a parsed JSON value: the keys of every object sorted by their
 * length in bytes, then bytewise (jsonb's internal order, the order `jsonb` gives back), arrays kept as they are.
 *
 * Event payloads were stored as `jsonb` and served in that order; they are stored as the `json` text the host wrote
 * since the lean event store (migration 1765100070000), which keeps the order they were written in. Every event view
 * (event-log.service.ts `toView`: read back, just written, or delivered to a webhook) puts the keys back in jsonb's
 * order, so an event is served byte for byte as before, and the same whichever path served it.
 */
export function jsonbOrder<T>(value: T): T {
  if (Array.isArray(value)) return value.map((v) => jsonbOrder(v)) as T;
  if (value === null || typeof value !== 'object') return value;
  const keys = Object.keys(value as Record<string, unknown>);
  const sorted = keys.map((k) => ({ k, b: Buffer.from(k, 'utf8') })).sort((x, y) => x.b.length - y.b.length || Buffer.compare(x.b, y.b));
  const out: Record<string, unknown> = {};
  for (const { k } of sorted) out[k] = jsonbOrder((value as Record<string, unknown>)[k]);
  return out as T;
}
