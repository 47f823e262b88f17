import type { TenantScope } from '../identity/principal';

/**
 * What the event log asks of the owner of the runs (the runs capability) about the streams that are
 * runs. The platform declares it and never names the run table; the runs capability implements it
 * with SQL of its own table and registers it (EventLogService.registerRunStreams). Without it (runs
 * not mounted) no stream is a run: nothing is notified, followed or opened as one.
 */
export interface RunStreams {
  /**
   * A SELECT with one row (column "id", text) per run among `ids` (an SQL uuid[] expression) that
   * a replica other than the executing one follows: the append statement notifies those in the same
   * statement (docs/runs.md, followers), so a follower elsewhere is woken at once.
   */
  followed(ids: string): string;
  /** Marks a run followed from this replica for the next minute (its executing replica's writes notify it). */
  markFollowed(scope: TenantScope, runId: string): Promise<void>;
  /**
   * The open-run read's source of the run: a SELECT of the run $1 (uuid) of tenant $2, in workspace
   * $3 when it is not null, with the columns "id" (uuid), "tenant" and "status"; none when there is
   * no such run the caller may see.
   */
  readonly openRunSource: string;
}
