import { Inject, Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { Advertiser, CapabilityAdvertiser } from '../../platform/discovery/capability-advertiser';
import { DomainError } from '../../platform/errors/domain-error';
import type { TenantScope } from '../../platform/identity/principal';
import { RUNS_SETTINGS, RunsSettings } from './runs.settings';

/** The statuses a run counts against the in-flight cap in: queued or executing (not waiting on a person, paused or finished). */
export const IN_FLIGHT = ['pending', 'running'];

/** A tenant's runs in flight, counted up to the cap ($3), from an index of unfinished runs only (the list-plans test holds which). */
export const IN_FLIGHT_SQL = `SELECT count(*)::int AS "n" FROM (SELECT 1 FROM "run" WHERE "tenant" = $1 AND "status" = ANY($2::text[]) AND "kind" = 'workflow' LIMIT $3) "f"`;

/**
 * The production profile's backpressure (production-profile.md §Backpressure): a tenant with
 * `cap` runs queued or executing gets `503 service_unavailable` with `Retry-After` (and the same
 * seconds in `details.retryAfter`) for a new run, before anything is written. The count stops at
 * the cap (`LIMIT`), over a partial index of unfinished runs (`run_tenant_status_not_completed_idx` or
 * the claim's), so its cost is bounded by the cap and the runs under way, not by the tenant's history. Under concurrent creations a few runs may pass the cap by
 * as many as race it: the cap bounds load, it is not a quota.
 */
export async function refuseAtCapacity(db: EntityManager, scope: TenantScope, admission: { inflightCap: number; retryAfterSeconds: number }): Promise<void> {
  const cap = admission.inflightCap;
  if (cap <= 0) return;
  const [row] = (await db.query(IN_FLIGHT_SQL, [scope.tenant, IN_FLIGHT, cap])) as Array<{ n: number }>;
  if ((row?.n ?? 0) < cap) return;
  const retryAfter = admission.retryAfterSeconds;
  throw new DomainError(
    'service_unavailable',
    503,
    `Server at capacity: this tenant has ${cap} runs queued or executing. Retry after ${retryAfter}s.`,
    { retryAfter, inflightCap: cap },
    { 'Retry-After': String(retryAfter) },
  );
}

/**
 * `production.backpressure` (capabilities.schema.json; the `openwop-production` profile): at
 * capacity the host answers 503 with `Retry-After` (the in-flight cap when set, and always a
 * database pool that is exhausted or a database that does not answer). `inflightCap` and
 * `retryAfterSeconds` are advertised only while the cap is on: they describe it.
 */
@Injectable()
@Advertiser()
export class BackpressureAdvertiser implements CapabilityAdvertiser {
  constructor(@Inject(RUNS_SETTINGS) private readonly settings: RunsSettings) {}

  advertise(): Record<string, unknown> {
    const { inflightCap, retryAfterSeconds } = this.settings.admission;
    return { production: { supported: true, backpressure: { supported: true, ...(inflightCap > 0 ? { inflightCap, retryAfterSeconds } : {}) } } };
  }
}
