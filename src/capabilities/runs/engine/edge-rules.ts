/**
 * Edge trigger rules (RFC 0125, `WorkflowEdge.triggerRule`; RFC 0223 for a rejected approval gate):
 * how a node fires given the outcomes of its incoming edges' sources.
 *
 * | rule | fires when | never fires when |
 * | --- | --- | --- |
 * | `all_success` (default) | every source completed | a source failed or was skipped |
 * | `any_success` | a source completed | every source settled and none completed |
 * | `all_complete` | every source settled (completed, failed or skipped) | — |
 * | `none_failed` | every source settled and none failed | a source failed |
 * | `any_failed` | a source failed | every source settled and none failed |
 *
 * A node's incoming edges are grouped by rule; it fires when every group fires, and is skipped when
 * one never can. A failed node fails the run unless an edge out of it admits a failed source
 * (`all_complete` or `any_failed`): then the failure is routed and the run goes on.
 */
import type { WorkflowDefinition } from '../workflow-definition';

export const TRIGGER_RULES = ['all_success', 'any_success', 'all_complete', 'none_failed', 'any_failed'] as const;
export type TriggerRule = (typeof TRIGGER_RULES)[number];

/** A source's outcome as its target sees it; undefined: not settled (for the target's next execution). */
export type SourceOutcome = 'completed' | 'failed' | 'skipped' | undefined;

export type Readiness = 'ready' | 'wait' | 'never';

/** Whether an edge with this rule lets a failed source through. */
export function admitsFailure(rule: TriggerRule | undefined): boolean {
  return rule === 'all_complete' || rule === 'any_failed';
}

/** Whether a failure of the node is routed: an edge out of it admits a failed source. */
export function failureRouted(def: WorkflowDefinition, nodeId: string): boolean {
  return def.edges.some((e) => e.from === nodeId && admitsFailure(e.triggerRule));
}

function group(rule: TriggerRule, outcomes: SourceOutcome[]): Readiness {
  const settled = outcomes.every((o) => o !== undefined);
  const has = (o: SourceOutcome) => outcomes.includes(o);
  switch (rule) {
    case 'all_success':
      return has('failed') || has('skipped') ? 'never' : settled ? 'ready' : 'wait';
    case 'any_success':
      return has('completed') ? 'ready' : settled ? 'never' : 'wait';
    case 'all_complete':
      return settled ? 'ready' : 'wait';
    case 'none_failed':
      return has('failed') ? 'never' : settled ? 'ready' : 'wait';
    case 'any_failed':
      return has('failed') ? 'ready' : settled ? 'never' : 'wait';
  }
}

/**
 * Whether a node with incoming edges fires now, waits, or never fires, given each source's outcome.
 * (A node without incoming edges is the engine's to start.)
 */
export function readiness(def: WorkflowDefinition, nodeId: string, outcome: (sourceId: string) => SourceOutcome): Readiness {
  const byRule = new Map<TriggerRule, SourceOutcome[]>();
  for (const e of def.edges) {
    if (e.to !== nodeId) continue;
    const rule = e.triggerRule ?? 'all_success';
    byRule.set(rule, [...(byRule.get(rule) ?? []), outcome(e.from)]);
  }
  let result: Readiness = 'ready';
  for (const [rule, outcomes] of byRule) {
    const r = group(rule, outcomes);
    if (r === 'never') return 'never';
    if (r === 'wait') result = 'wait';
  }
  return result;
}
