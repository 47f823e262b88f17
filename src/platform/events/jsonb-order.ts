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
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) {
    let out: unknown[] | undefined;
    value.forEach((v, i) => {
      const o = jsonbOrder(v);
      if (o !== v) (out ??= value.slice())[i] = o;
    });
    return (out ?? value) as T;
  }
  // Run on every event served: an object already in order, with nothing nested out of order, is returned as it is.
  const obj = value as Record<string, unknown>;
  const keys = Object.keys(obj);
  let ordered = true;
  for (let i = 1; i < keys.length && ordered; i++) ordered = before(keys[i - 1], keys[i]);
  const nested = keys.map((k) => jsonbOrder(obj[k]));
  if (ordered && nested.every((v, i) => v === obj[keys[i]])) return value;
  const pairs = keys.map((k, i) => ({ k, v: nested[i] })).sort((x, y) => (x.k === y.k ? 0 : before(x.k, y.k) ? -1 : 1));
  const out: Record<string, unknown> = {};
  for (const { k, v } of pairs) out[k] = v;
  return out as T;
}

/** jsonb's key order: shorter in UTF-8 bytes first, then bytewise. */
function before(a: string, b: string): boolean {
  const x = Buffer.byteLength(a);
  const y = Buffer.byteLength(b);
  return x !== y ? x < y : Buffer.compare(Buffer.from(a), Buffer.from(b)) < 0;
}
