import { NodeExecutionContext, NodeExecutionError } from '@openwop-host/plugin-sdk';
import type { EventQuery, RunEventView } from '../../../platform/events/event-log.service';
import type { TenantScope } from '../../../platform/identity/principal';
import type { ClaimedRow } from '../engine/run-store';

/** What the replay source reads: run logs, as the event log answers them (EventLogService.read). */
export interface ReplayLog {
  read(scope: TenantScope, streamId: string, q?: EventQuery): Promise<RunEventView[]>;
}

/** One recorded execution of a node: its outputs, or the error it failed with. */
type Terminal = { ok: true; outputs: Record<string, unknown> } | { ok: false; code: string; message: string };

const TERMINALS = ['node.completed', 'node.failed'] as const;
const PAGE = 1000;

/**
 * The source of a `replay` fork: its nodes' recorded outcomes stand in for every node that is not
 * `deterministic` (replay.md caveats 1 and 2: no external system is called, no human asked again),
 * and the wall clock is not observed (no `durationMs`), so two replays log the same events.
 *
 * An outcome is keyed on `(sourceRunId, nodeId, n)` (replay.md §Suppression rule 2): `n` is one more
 * than the node's terminal events (`node.completed`, `node.failed`) in the fork's own log before this
 * execution, its inherited prefix included, and the outcome is the source's `n`-th terminal of that
 * node. A node the source ran once resolves from its one outcome; in a loop each visit resolves from
 * the source's visit of the same ordinal, and a visit the source never finished has none: it fails
 * closed with `replay_source_missing` (rule 3) instead of reusing another visit's outcome.
 */
export class ReplaySource {
  private source?: Promise<Map<string, Terminal[]>>;
  private executed?: Promise<Map<string, number>>;

  private constructor(
    private readonly log: ReplayLog,
    readonly sourceRunId: string,
    private readonly runId: string,
    private readonly scope: TenantScope,
  ) {}

  /** The replay source of a run created by a `replay` fork, else nothing. */
  static of(row: ClaimedRow, log: ReplayLog): ReplaySource | undefined {
    const fork = row.metadata?.fork as { mode?: string; sourceRunId?: string } | undefined;
    if (fork?.mode !== 'replay' || typeof fork.sourceRunId !== 'string') return undefined;
    return new ReplaySource(log, fork.sourceRunId, row.id, { tenant: row.tenant, workspace: row.workspace ?? undefined });
  }

  /**
   * The outputs the source recorded for this execution of a node (same tenant). A recorded failure
   * fails it the same way; no recorded outcome for its ordinal fails it closed.
   */
  async outputs(nodeId: string, policy: string): Promise<Record<string, unknown>> {
    this.source ??= this.terminals(this.sourceRunId);
    // The fork's own executions so far, read once per claim: every earlier claim's writes are in its log.
    this.executed ??= this.terminals(this.runId).then((m) => new Map([...m].map(([id, t]) => [id, t.length])));
    const executed = await this.executed;
    const n = (executed.get(nodeId) ?? 0) + 1;
    executed.set(nodeId, n);
    const recorded = (await this.source).get(nodeId)?.[n - 1];
    if (!recorded) {
      throw new NodeExecutionError('replay_source_missing', `The source run ${this.sourceRunId} has no recorded outcome for execution ${n} of node ${nodeId} (replayPolicy ${policy}); a replay does not execute it.`);
    }
    if (!recorded.ok) throw new NodeExecutionError(recorded.code, recorded.message);
    return recorded.outputs;
  }

  /** The default-deny guard at the effect seam: a node declared deterministic that reaches an effect fails closed. */
  effect(nodeId: string): NodeExecutionContext['effect'] {
    return () => Promise.reject(new NodeExecutionError('replay_source_missing', `Node ${nodeId} reached an external effect during a replay of ${this.sourceRunId}; a replay performs none.`));
  }

  /** A run's terminal node events by node, in log order. */
  private async terminals(runId: string): Promise<Map<string, Terminal[]>> {
    const rows: RunEventView[] = [];
    for (const type of TERMINALS) {
      for (let after = 0; ; ) {
        const page = await this.log.read(this.scope, runId, { type, afterSequence: after, limit: PAGE });
        rows.push(...page);
        if (page.length < PAGE) break;
        after = page[page.length - 1].sequence;
      }
    }
    rows.sort((a, b) => a.sequence - b.sequence);
    const out = new Map<string, Terminal[]>();
    for (const e of rows) {
      const p = (e.payload ?? {}) as { nodeId?: unknown; outputs?: unknown; error?: { code?: unknown; message?: unknown } };
      const nodeId = typeof e.nodeId === 'string' ? e.nodeId : typeof p.nodeId === 'string' ? p.nodeId : undefined;
      if (!nodeId) continue;
      const t: Terminal = e.type === 'node.completed'
        ? { ok: true, outputs: p.outputs && typeof p.outputs === 'object' ? (p.outputs as Record<string, unknown>) : {} }
        : { ok: false, code: typeof p.error?.code === 'string' ? p.error.code : 'node_failed', message: typeof p.error?.message === 'string' ? p.error.message : 'The node failed in the source run.' };
      out.set(nodeId, [...(out.get(nodeId) ?? []), t]);
    }
    return out;
  }
}
