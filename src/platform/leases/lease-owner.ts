import { randomUUID } from 'node:crypto';

/**
 * The one way to mint a lease owner id: the instance id names the replica in the rows (operators read
 * it there), the uuid makes the id unique per process or per pass, so a restarted replica with the
 * same instance id never mistakes its predecessor's leases for its own.
 */
export function leaseOwnerId(instanceId: string): string {
  return `${instanceId}:${randomUUID()}`;
}
