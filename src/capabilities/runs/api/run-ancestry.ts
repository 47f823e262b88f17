import type { EntityManager } from 'typeorm';
import { NotFoundError } from '../../../platform/errors/domain-error';
import type { TenantScope } from '../../../platform/identity/principal';
import { findRun } from '../run-snapshot';
import { linkageOf } from '../run-variables';

/** `getRunAncestry`'s answer (runs.md §Diff and ancestry, run-ancestry-response.schema.json). */
export interface RunAncestry {
  runId: string;
  hostId: string;
  parent: { runId: string; hostId: string; cause: 'core.subWorkflow' } | null;
}

/**
 * A run's immediate parent in the composition chain (RFC 0040 §C): the run whose node started it.
 * On this host the only way one run starts another is a node of the parent starting a child run
 * (`core.subWorkflow`, and `core.tool` calling a workflow tool, which starts the chain as a
 * sub-workflow of the calling node the same way), recorded on the child's row (`parentRunId`), so
 * a child's cause is `core.subWorkflow` and its parent is on this host (no `wellKnownUrl`). A run
 * created by `POST /runs` has no parent, and neither has a fork: its lineage is `metadata.fork`
 * (`sourceRunId`), not a dispatch. An unknown run, or one outside the caller's scope, is 404.
 */
export async function runAncestry(db: EntityManager, scope: TenantScope, runId: string, hostId: string): Promise<RunAncestry> {
  const run = await findRun(db, scope, runId);
  if (!run) throw new NotFoundError('No such run.');
  const link = linkageOf(run);
  return { runId: run.id, hostId, parent: link ? { runId: link.parentRunId, hostId, cause: 'core.subWorkflow' } : null };
}
