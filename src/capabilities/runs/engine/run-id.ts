import { randomUUID } from 'node:crypto';

/**
 * A new run's id: a UUID version 7 (RFC 9562), the creation time in milliseconds in its first 48
 * bits and random bits after, so runs' ids grow with their creation and a new run's entries land at
 * the end of the run, node and event-stream keys instead of on a random page of each (migration
 * 1765410000000, whose `run_new_id()` makes the same ids for rows inserted without one). Ids of one
 * millisecond are in random order among themselves; nothing orders runs by id (lists page by creation
 * time, the id only breaking ties).
 */
export function newRunId(now = Date.now()): string {
  const t = now.toString(16).padStart(12, '0');
  // randomUUID's version nibble (index 14) becomes 7; its variant and the 74 random bits stay.
  return `${t.slice(0, 8)}-${t.slice(8, 12)}-7${randomUUID().slice(15)}`;
}
