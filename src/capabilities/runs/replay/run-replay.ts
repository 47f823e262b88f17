import { NodeExecutionContext, NodeExecutionError } from '@openwop-host/plugin-sdk';
import type { ClaimedRow, RunStore } from '../engine/run-store';

/**
 * The source of a `replay` fork: its nodes' recorded outcomes stand in for every node that is not
 * `deterministic` (replay.md caveats 1 and 2: no external system is called, no human asked again),
 * and the wall clock is not observed (no `durationMs`), so two replays log the same events.
 */
export class ReplaySource {
  private recorded?: Promise<Map<string, Record<string, unknown>>>;

  private constructor(
    private readonly store: Pick<RunStore, 'recordedOutcomes'>,
    readonly sourceRunId: string,
    private readonly tenant: string,
  ) {}

  /** The replay source of a run created by a `replay` fork, else nothing. */
  static of(row: ClaimedRow, store: Pick<RunStore, 'recordedOutcomes'>): ReplaySource | undefined {
    const fork = row.metadata?.fork as { mode?: string; sourceRunId?: string } | undefined;
    return fork?.mode === 'replay' && typeof fork.sourceRunId === 'string' ? new ReplaySource(store, fork.sourceRunId, row.tenant) : undefined;
  }

  /** The outputs the source recorded for a node (same tenant); a node it has none for fails closed. */
  async outputs(nodeId: string, policy: string): Promise<Record<string, unknown>> {
    this.recorded ??= this.store.recordedOutcomes({ runId: this.sourceRunId, tenant: this.tenant });
    const outputs = (await this.recorded).get(nodeId);
    if (!outputs) throw new NodeExecutionError('replay_source_missing', `The source run ${this.sourceRunId} has no recorded outcome for node ${nodeId} (replayPolicy ${policy}); a replay does not execute it.`);
    return outputs;
  }

  /** The default-deny guard at the effect seam: a node declared deterministic that reaches an effect fails closed. */
  effect(nodeId: string): NodeExecutionContext['effect'] {
    return () => Promise.reject(new NodeExecutionError('replay_source_missing', `Node ${nodeId} reached an external effect during a replay of ${this.sourceRunId}; a replay performs none.`));
  }
}
