/**
 * The spans of recent runs, as this process recorded them while it exported them (tracing on), so
 * a run's debug bundle (GET /v1/runs/{runId}/debug-bundle) can carry them: the run's `openwop.run`
 * span (a child of the trace context the creating request carried), its node spans, and every span
 * started under them (tool calls, MCP client requests), with the ids, times and statuses that went
 * to the OTLP collector. Nothing of OpenTelemetry is imported here: the SDK's span processor
 * (./otel-sdk.ts) hands each span in as a function that reads it, so a span still open reads with
 * `endedAt: null` and the same span read twice reads the same.
 *
 * Bounded and per process: the spans of the last MAX_RUNS runs, at most MAX_SPANS_PER_RUN each
 * (later ones are counted, not kept) and MAX_SPANS in all (the oldest runs make room); a run executed by another replica, or before a restart, has
 * its spans in the tracing backend only. Spans carry identifiers only (the host never puts inputs,
 * outputs or credentials in attributes); the bundle still masks what looks like a credential.
 */

export type RecordedSpanKind = 'internal' | 'server' | 'client' | 'producer' | 'consumer';

/** A span as the debug bundle carries it (debug-bundle.schema.json `spans[]`, RFC 0207 §C). */
export interface RecordedSpan {
  name: string;
  traceId: string;
  spanId: string;
  parentSpanId: string | null;
  kind: RecordedSpanKind;
  startedAt: string;
  endedAt: string | null;
  status: { code: 'unset' | 'ok' | 'error'; message?: string };
  attributes: Record<string, unknown>;
}

/** The attribute that names a span's run (observability.md §"Span attributes"). */
export const RUN_ID_ATTRIBUTE = 'openwop.run_id';
export const MAX_RUNS = 1000;
export const MAX_SPANS_PER_RUN = 256;
export const MAX_SPANS = 20_000;
/** Span ids remembered to find the run of a child span (a span's run is its parent's). */
const MAX_LINKS = 20 * MAX_RUNS;

interface RunEntry {
  spans: Array<() => RecordedSpan>;
  dropped: number;
}

export class RunSpanStore {
  private readonly runs = new Map<string, RunEntry>();
  /** span id -> run id, for the spans of runs (oldest first). */
  private readonly links = new Map<string, string>();
  private total = 0;

  /**
   * A span started: it belongs to the run its `openwop.run_id` attribute names, else to the run of
   * its parent span (if that is a run's), else to none.
   */
  started(span: { spanId: string; parentSpanId?: string; runId?: string }, read: () => RecordedSpan): void {
    const runId = span.runId ?? (span.parentSpanId ? this.links.get(span.parentSpanId) : undefined);
    if (!runId) return;
    this.links.set(span.spanId, runId);
    if (this.links.size > MAX_LINKS) this.links.delete(this.links.keys().next().value as string);
    let entry = this.runs.get(runId);
    if (!entry) {
      entry = { spans: [], dropped: 0 };
      this.runs.set(runId, entry);
      if (this.runs.size > MAX_RUNS) this.evictOldest();
    }
    if (entry.spans.length >= MAX_SPANS_PER_RUN) {
      entry.dropped++;
      return;
    }
    entry.spans.push(read);
    this.total++;
    while (this.total > MAX_SPANS && this.runs.size > 1) this.evictOldest();
  }

  private evictOldest(): void {
    const [runId, entry] = this.runs.entries().next().value as [string, RunEntry];
    this.runs.delete(runId);
    this.total -= entry.spans.length;
  }

  /** The run's spans in start order, and how many more it had than were kept. */
  spans(runId: string): { spans: RecordedSpan[]; dropped: number } {
    const entry = this.runs.get(runId);
    return entry ? { spans: entry.spans.map((read) => read()), dropped: entry.dropped } : { spans: [], dropped: 0 };
  }

  clear(): void {
    this.runs.clear();
    this.links.clear();
    this.total = 0;
  }
}

let store: RunSpanStore | undefined;

/** The store the running tracing SDK records into (created when tracing starts). */
export function runSpanStore(): RunSpanStore {
  return (store ??= new RunSpanStore());
}

/** The spans this process recorded for run `runId` (none while tracing is off). */
export function recordedRunSpans(runId: string): { spans: RecordedSpan[]; dropped: number } {
  return store ? store.spans(runId) : { spans: [], dropped: 0 };
}
