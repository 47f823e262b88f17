import { parseTraceContext, TraceContext, withTraceContext } from '../../../platform/tracing/trace-context';
import { exportSoon, SpanHandle, startSpan } from '../../../platform/tracing/tracing';

/** What the run spans read of a claimed run row. */
export interface TracedRunRow {
  id: string;
  tenant: string;
  workspace: string | null;
  workflow_id: string;
  trace_parent?: string | null;
  trace_state?: string | null;
}

interface NodeResult {
  attempt: number;
  ok?: unknown;
  failed?: { code: string };
  suspend?: unknown;
  engineFault?: unknown;
}

/**
 * The spans of one claim's execution of a run (observability.md §"Span naming"): `openwop.run`,
 * a child of the trace context stored with the run by the request that created it (a new trace
 * when there was none), and one `openwop.node.<typeId>` per node execution under it. Attributes are
 * identifiers only (run, workflow, tenant, node, type, attempt, outcome): never inputs, outputs or a
 * credential. While tracing is off every method just runs what it is given.
 *
 * A run that suspends on an approval gate and is resumed later (possibly elsewhere) is executed by
 * another claim: that claim's `openwop.run` span (`openwop.run.resumed = true`) has the same parent,
 * so both halves sit in the creating request's trace.
 */
export class RunTrace {
  private constructor(
    private readonly row: TracedRunRow,
    private readonly span: SpanHandle | undefined,
    /** The stored context: what outbound calls carry while tracing is off. */
    private readonly parent: TraceContext | undefined,
  ) {}

  static start(row: TracedRunRow, resumed: boolean): RunTrace {
    const parent = parseTraceContext(row.trace_parent ?? undefined, row.trace_state ?? undefined);
    const span = startSpan('openwop.run', {
      kind: 'internal',
      parent: parent ?? null,
      attributes: {
        'openwop.run_id': row.id,
        'openwop.workflow_id': row.workflow_id,
        'openwop.protocol_version': '1.0',
        'openwop.tenant_id': row.tenant,
        'openwop.scope_id': row.workspace ?? undefined,
        'openwop.run.resumed': resumed,
      },
    });
    return new RunTrace(row, span, parent);
  }

  /**
   * Runs the execution with the run span current; while tracing is off, with the stored context
   * (the caller's), so a tool call forwards the caller's `traceparent` on whichever replica claimed
   * the run, and never the context of whatever request happened to wake the engine.
   */
  run<T>(fn: () => Promise<T>): Promise<T> {
    return withTraceContext(this.span?.context ?? this.parent, fn);
  }

  /** One node execution, in its own span under the run's. */
  async node<T extends NodeResult>(node: { id: string; typeId: string }, fn: () => Promise<T>): Promise<T> {
    if (!this.span) return fn();
    const span = startSpan(`openwop.node.${node.typeId}`, {
      parent: this.span.context,
      attributes: { 'openwop.run_id': this.row.id, 'openwop.workflow_id': this.row.workflow_id, 'openwop.node_id': node.id, 'openwop.node_type': node.typeId },
    });
    if (!span) return fn();
    try {
      const r = await withTraceContext(span.context, fn);
      span.setAttributes({ 'openwop.node_attempt': r.attempt, 'openwop.node.outcome': r.ok ? 'completed' : r.suspend ? 'suspended' : r.engineFault ? 'engine-error' : 'failed' });
      if (r.failed) span.fail(r.failed.code);
      return r;
    } catch (e) {
      span.fail((e as { code?: string }).code ?? 'node_failed');
      throw e;
    } finally {
      span.end();
    }
  }

  /** The run reached a status this claim wrote (terminal, or parked waiting for approval). */
  status(status: string, error?: { code: string }): void {
    this.span?.setAttributes({ 'openwop.run_status': status });
    if (error) this.span?.fail(error.code);
  }

  /** The claim's execution ended (`stopped`: lease lost, shutdown, or an engine fault). */
  end(stopped?: string): void {
    if (!this.span) return;
    if (stopped) this.span.setAttributes({ 'openwop.run.stopped': stopped });
    this.span.end();
    // The run's spans (its nodes', its tool calls', its MCP client spans) leave now, not at the next batch.
    exportSoon();
  }
}
