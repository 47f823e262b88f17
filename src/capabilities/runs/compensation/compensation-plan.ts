import { createHash } from 'node:crypto';
import type { EntityManager } from 'typeorm';
import type { RunEventView } from '../../../platform/events/event-log.service';
import { logicalInvocationId } from '../../../platform/idempotency/activity-ledger.service';
import { retryPolicyOf } from '../dead-letters/node-retry';
import { RunNodeEntity } from '../run-node.entity';
import type { WorkflowDefinition } from '../workflow-definition';
import { CompensationPolicy, RetryBounds, resolveMapping } from './compensation-declaration';
import type { PlanEntry } from './run-compensation.entity';

/** What minting a plan reads of a run: its recorded facts only. */
export interface RunFacts {
  tenant: string;
  runId: string;
  definition: WorkflowDefinition;
  inputs: Record<string, unknown>;
  /** The run's `node.completed` events, in log order (the durable forward-completion sequence). */
  completions: Pick<RunEventView, 'nodeId' | 'sequence'>[];
  /** The first effect the activity ledger recorded per node (its RFC 0150 identity). */
  forwardEffects: ReadonlyMap<string, string>;
  /** Completions at or after this sequence only (a `branch` fork: the inherited prefix is the source's, not this run's). */
  fromSeq?: number;
}

/**
 * The inverse action's identity, RFC 0151 §C: (tenantId, runId, forwardLogicalInvocationId,
 * compensationOrdinal, profileVersion), never the attempt. It is the idempotency key the inverse
 * effect presents downstream, so a retry is one obligation seen twice, not two.
 */
export function inverseActionId(tenant: string, runId: string, forwardId: string, position: number, profileVersion: string): string {
  return createHash('sha256').update(['openwop:compensation:v1', tenant, runId, forwardId, String(position), profileVersion].join('\0')).digest('base64url');
}

/** The node outputs as the run committed them (its completed node rows). */
export async function recordedOutputs(m: EntityManager, runId: string): Promise<Map<string, Record<string, unknown>>> {
  const rows = await m.getRepository(RunNodeEntity).find({ where: { runId, status: 'completed' } });
  return new Map(rows.map((r) => [r.nodeId, r.outputs ?? {}]));
}

/**
 * The plan's entries (RFC 0151 §C), in execution order: the committed nodes declaring an inverse
 * action (and the committed irreversible ones, as entries that can never complete) by DESCENDING
 * forward-completion ordinal, each with its input resolved from recorded facts now, at plan time.
 * Throws UnresolvedReference when a mapping names a fact the run did not record.
 */
export function mintEntries(facts: RunFacts, outputs: ReadonlyMap<string, Record<string, unknown>>, policy: CompensationPolicy): PlanEntry[] {
  const byId = new Map(facts.definition.nodes.map((n) => [n.id, n]));
  const ordinals = new Map<string, number>();
  for (const c of facts.completions) if (c.nodeId && !ordinals.has(c.nodeId)) ordinals.set(c.nodeId, ordinals.size + 1);
  const own = new Set(facts.completions.filter((c) => facts.fromSeq === undefined || Number(c.sequence) >= facts.fromSeq).map((c) => c.nodeId));
  const committed = [...ordinals.entries()]
    .filter(([nodeId]) => own.has(nodeId) && outputs.has(nodeId) && (byId.get(nodeId)?.compensation || byId.get(nodeId)?.irreversibleEffect))
    .sort((a, b) => b[1] - a[1]);
  return committed.map(([nodeId, ordinal], position) => {
    const node = byId.get(nodeId)!;
    const forward = facts.forwardEffects.get(nodeId) ?? logicalInvocationId({ tenant: facts.tenant, runId: facts.runId, nodeId, ordinal: 0, providerKey: 'openwop:node' });
    const decl = node.compensation;
    const retry: RetryBounds = decl?.retry ?? policy.retry ?? retryPolicyOf(node.config) ?? { maxAttempts: 1, backoffMs: 0 };
    const timeoutMs = decl?.timeoutMs ?? policy.timeoutMs;
    return {
      ordinal,
      position,
      nodeId,
      forwardLogicalInvocationId: forward,
      effectId: inverseActionId(facts.tenant, facts.runId, forward, position, policy.profileVersion),
      nodeTypeId: decl ? decl.nodeTypeId : null,
      input: decl ? resolveMapping(decl.inputMapping, { inputs: facts.inputs, outputs }) : null,
      retry,
      ...(timeoutMs !== undefined ? { timeoutMs } : {}),
      status: decl ? 'pending' : 'irreversible',
      attempts: 0,
      attemptBudget: decl ? retry.maxAttempts : 0,
      downstreamKeys: [],
    } satisfies PlanEntry;
  });
}

/**
 * A `replay` fork's entries (RFC 0151 §F): the source plan's entries with their recorded identities,
 * inputs and outcomes, executing nothing: a replay never re-fires an inverse effect.
 */
export function replayedEntries(source: PlanEntry[], sourceRunId: string): PlanEntry[] {
  return source.map((e) => ({
    ...e,
    status: e.status === 'completed' || e.status === 'skipped' || e.status === 'terminated' || e.status === 'irreversible' ? e.status : 'failed',
    attempts: 0,
    attemptBudget: 0,
    downstreamKeys: [],
    replayedFrom: sourceRunId,
  }));
}

/** The §D fold of a plan that is no longer active: completed, partial or failed. */
export function foldSettled(entries: PlanEntry[]): 'completed' | 'partial' | 'failed' {
  const done = entries.filter((e) => e.status === 'completed').length;
  if (done === entries.length) return 'completed';
  return done ? 'partial' : 'failed';
}
