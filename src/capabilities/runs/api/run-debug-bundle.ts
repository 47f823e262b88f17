import { Injectable } from '@nestjs/common';
import { Advertiser, CapabilityAdvertiser } from '../../../platform/discovery/capability-advertiser';
import type { RunEventView } from '../../../platform/events/event-log.service';
import { scanForCredentials } from '../../../platform/secrets/credential-scan';
import type { RecordedSpan } from '../../../platform/tracing/run-spans';
import type { RunSnapshot } from '../run-snapshot';

/**
 * The run debug bundle (spec v1 debug-bundle.md): one run's snapshot and event log in one portable,
 * secret-free document an operator can hand to a vendor.
 *
 * Redaction (`redactionMode: "mask"`): the host cannot know which of a run's data is secret (a
 * credential reference, a customer's name, a token pasted into an input), so every string a person
 * or a tool supplied is masked and only the protocol's own structure is kept:
 * - inside user data (inputs, outputs, variables, answers, arguments, results, messages, titles,
 *   prompts: any key not in the structural list below), every string becomes `[REDACTED]`; numbers,
 *   booleans, nulls, keys and the shape stay, so a bundle still shows what was there and how big;
 * - structural strings are kept (ids, types, statuses, codes, reasons, timestamps, node types), unless
 *   they look like a credential (the host's credential scan: bearer headers, JWTs, vendor keys...);
 * - error messages are kept for diagnosis unless they look like a credential.
 * The bundle is capped (8 MB of events by default); a longer log is cut at an event boundary and the
 * bundle says so (`truncated`, `truncatedReason`).
 *
 * Spans: while tracing is on, `spans` holds the run's spans as this replica recorded them when it
 * exported them (src/platform/tracing/run-spans.ts): `openwop.run` in the trace of the request that
 * created the run, its node spans and the tool and MCP spans under them, with the ids, times and
 * statuses the OTLP collector received (an open span has `endedAt: null`). The host keeps the spans
 * of its last 1000 runs, 256 each and 20,000 in all, in memory: a run executed by another replica or before a restart,
 * or a host with tracing off, gives `spans: []`; the tracing backend has them by the run's trace id.
 * Span attributes are identifiers only; a string that looks like a credential is masked all the same.
 */
export const DEBUG_BUNDLE_MAX_BYTES = 8 * 1024 * 1024;
export const MASK = '[REDACTED]';

/** Keys whose string values are protocol structure, not user data. */
const STRUCTURAL = new Set([
  'type', 'status', 'kind', 'reason', 'code', 'outcome', 'transport', 'trustBoundary', 'mode', 'policy', 'decision', 'disposition',
  'action', 'scope', 'scopes', 'source', 'safetyTier', 'replayPolicy', 'egress', 'tier', 'typeId', 'nodeId', 'workflowId', 'runId',
  'interruptId', 'eventId', 'model', 'provider', 'tenant', 'workspace', 'principal', 'principalKind', 'currentNodeId', 'timestamp', 'version',
  'eventLogSchemaVersion', 'revision', 'protocolVersion', 'toolId', 'serverId', 'method', 'role', 'roles', 'state', 'phase', 'attempt',
]);

/** Keys that open user data: everything under them is masked, whatever its own keys are called. */
const USER_DATA = new Set([
  'inputs', 'input', 'outputs', 'output', 'variables', 'vars', 'answers', 'answer', 'value', 'values', 'resumeValue', 'response',
  'arguments', 'args', 'result', 'results', 'content', 'messages', 'data', 'config', 'configurable', 'metadata', 'tags', 'body',
  'headers', 'query', 'params', 'prompt', 'question', 'title', 'description', 'text', 'comment', 'note', 'payload',
]);

function structural(key: string): boolean {
  return STRUCTURAL.has(key) || /(?:Id|Ids|At|Ms|Count|Version|Sequence)$/.test(key);
}

function looksLikeCredential(s: string): boolean {
  return scanForCredentials(s, { maxFindings: 1 }).length > 0;
}

export interface MaskState {
  applied: boolean;
}

/** A masked copy of `v`; `key` is the property it sits under, `inUser` whether it is inside user data. */
export function maskValue(v: unknown, state: MaskState, key = '', inUser = false): unknown {
  if (typeof v === 'string') {
    const keep = !inUser && (structural(key) || key === 'message') && !looksLikeCredential(v);
    if (keep) return v;
    state.applied = true;
    return MASK;
  }
  if (Array.isArray(v)) return v.map((x) => maskValue(x, state, key, inUser));
  if (v && typeof v === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v as Record<string, unknown>)) out[k] = maskValue(x, state, k, inUser || USER_DATA.has(k));
    return out;
  }
  return v;
}

export interface DebugBundle {
  bundleVersion: string;
  generatedAt: string;
  host: { name: string; version: string; vendor?: string };
  run: Record<string, unknown>;
  events: unknown[];
  spans: unknown[];
  metrics: { openwopCost: unknown; nodeCount: number; eventCount: number };
  redactionApplied: boolean;
  redactionMode: 'mask';
  truncated?: boolean;
  truncatedReason?: string;
}

/** A span as the bundle carries it: identifiers, times and status as recorded, any string that looks like a credential masked. */
function maskSpan(s: RecordedSpan, state: MaskState): RecordedSpan {
  const clean = (v: unknown): unknown => {
    if (typeof v === 'string' && looksLikeCredential(v)) {
      state.applied = true;
      return MASK;
    }
    return Array.isArray(v) ? v.map(clean) : v;
  };
  const attributes: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(s.attributes)) attributes[k] = clean(v);
  const status = s.status.message === undefined ? s.status : { code: s.status.code, message: clean(s.status.message) as string };
  return { ...s, status, attributes };
}

/** Assembles the bundle from the run as its caller reads it and its events in order (already scoped to the caller). */
export function buildDebugBundle(
  snapshot: RunSnapshot,
  events: RunEventView[],
  host: { name: string; version: string },
  opts: { maxBytes?: number; moreEvents?: boolean; spans?: RecordedSpan[]; spansDropped?: number } = {},
): DebugBundle {
  const state: MaskState = { applied: false };
  // The run as GET /v1/runs/{runId} answers it, its run-level keys kept and its data masked.
  const run: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(snapshot as unknown as Record<string, unknown>)) {
    run[k] = k === 'error' ? maskValue(v, state, k, false) : maskValue(v, state, k, USER_DATA.has(k) || k === 'nodeStates' || k === 'interrupt');
  }
  const max = opts.maxBytes ?? DEBUG_BUNDLE_MAX_BYTES;
  let size = 0;
  const kept: unknown[] = [];
  let cut = !!opts.moreEvents;
  for (const e of events) {
    const masked = { ...e, payload: maskValue(e.payload, state, 'payload', false) } as Record<string, unknown>;
    // The envelope's own strings (ids, type, timestamp) are structure; its payload is data.
    const bytes = Buffer.byteLength(JSON.stringify(masked));
    if (size + bytes > max) {
      cut = true;
      break;
    }
    size += bytes;
    kept.push(masked);
  }
  const nodes = new Set(kept.map((e) => (e as { nodeId?: string }).nodeId).filter((n): n is string => typeof n === 'string'));
  const spans = (opts.spans ?? []).map((s) => maskSpan(s, state));
  const metrics = (snapshot as unknown as { metrics?: { openwopCost?: unknown } }).metrics;
  return {
    bundleVersion: '1.0',
    generatedAt: new Date().toISOString(),
    host: { name: host.name, version: host.version },
    run,
    events: kept,
    spans,
    metrics: { openwopCost: metrics?.openwopCost ?? null, nodeCount: nodes.size, eventCount: kept.length },
    redactionApplied: state.applied,
    redactionMode: 'mask',
    ...(cut ? { truncated: true, truncatedReason: 'events_truncated_to_size_cap' } : opts.spansDropped ? { truncated: true, truncatedReason: 'spans_truncated_to_cap' } : {}),
  };
}

/** `debugBundle` (debug-bundle.md; the `openwop-debug-bundle` profile): GET /v1/runs/{runId}/debug-bundle is served. */
@Injectable()
@Advertiser()
export class DebugBundleAdvertiser implements CapabilityAdvertiser {
  advertise(): Record<string, unknown> {
    return { debugBundle: { supported: true } };
  }
}
