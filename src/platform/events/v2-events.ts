import * as fs from 'node:fs';
import * as path from 'node:path';
import { DomainError } from '../errors/domain-error';
import { v2RunError } from '../errors/v2-envelope';
import { SCHEMAS_ROOT } from '../schemas/schema-registry';
import type { Subject } from '../identity/subject';
import type { RunEventView } from './event-log.service';

/**
 * Run events under protocol major 2 (spec v2 events.md, persistence.md §The reader rule,
 * docs/versions.md): this host writes its event log in v1 vocabulary with sequences from 1 (what
 * `/v1` serves, byte for byte), and a major-2 read translates each event at the storage boundary:
 *
 * - `type` through `spec/v2/event-codemap.json` (`agent.toolCalled` → `agent.tool-called`); a
 *   type of a registered vendor org (`spec/v2/declaration.json` `extensions`) passes unchanged; any
 *   other type fails the read `500 event_type_unmapped` (never guessed);
 * - `sequence` from 0 (the stored sequence − 1), `schemaVersion: 1`, no `correlationId` (the v2
 *   envelope is closed);
 * - the payload to its closed v2 def (`run-event-payloads.schema.json` `_typeIndex`): a key the def
 *   does not declare moves under the vendor hatch as `x-<key>` (carried, never dropped), the ids the
 *   def types as tenant-bound (`runId`, `interruptId`, ...) are bound to the run's tenant, and
 *   `run.started.payload.owner` is `{ tenant, workspace?, subject }` (no `principal`).
 */

const V2_DIR = path.join(SCHEMAS_ROOT, 'openwop', 'v2');
const read = (file: string): unknown => JSON.parse(fs.readFileSync(path.join(V2_DIR, file), 'utf8'));

/** v1 type → v2 type, every row of the codemap. */
const CODEMAP: ReadonlyMap<string, string> = new Map(
  (read('event-codemap.json') as { rows: Array<{ v1: string; v2: string }> }).rows.map((r) => [r.v1, r.v2]),
);

/** The vendor orgs of the v2 registry: their event types are read under their own names. */
const REGISTERED_ORGS: ReadonlySet<string> = new Set(Object.keys((read('declaration.json') as { extensions?: Record<string, unknown> }).extensions ?? {}));

/** The id kinds that are tenant-bound on the wire (ids.schema.json `x-openwop-tenant-bound`). */
const BOUND_KINDS = new Set(['runId', 'interruptId', 'subscriptionId', 'deliveryId', 'effectId']);

interface PayloadDef {
  /** The declared keys, and which of them hold a tenant-bound id. */
  props: ReadonlyMap<string, boolean>;
  /** Whether keys beyond `props` must go under the vendor hatch. */
  closed: boolean;
}

/** Per v2 type, its payload def's declared keys (from the normative `_typeIndex`). */
const PAYLOADS: ReadonlyMap<string, PayloadDef> = (() => {
  const doc = read('run-event-payloads.schema.json') as { $defs: Record<string, Record<string, unknown>>; _typeIndex: { properties: Record<string, { $ref: string }> } };
  const out = new Map<string, PayloadDef>();
  for (const [type, ref] of Object.entries(doc._typeIndex.properties)) {
    const def = doc.$defs[ref.$ref.replace('#/$defs/', '')] ?? {};
    const props = new Map<string, boolean>();
    for (const [k, v] of Object.entries((def.properties ?? {}) as Record<string, { $ref?: string }>)) {
      const kind = typeof v?.$ref === 'string' ? /#\/\$defs\/([A-Za-z]+)$/.exec(v.$ref)?.[1] : undefined;
      props.set(k, !!kind && v.$ref!.startsWith('ids.schema.json') && BOUND_KINDS.has(kind));
    }
    out.set(type, { props, closed: def.additionalProperties === false });
  }
  return out;
})();

/** The vendor-hatch pattern of the v2 payload defs (RFC 0185 §B). */
const HATCH = /^(openwop-|x-|vendor\.)/;
/** An opaque id segment (ids.schema.json `opaque`). */
const OPAQUE = /^[A-Za-z0-9._~-]{16,128}$/;

/** The v2 name of a stored (v1) event type, or `event_type_unmapped` (500) when it has none. */
export function v2EventType(type: string): string {
  const mapped = CODEMAP.get(type);
  if (mapped) return mapped;
  const org = type.slice(0, type.indexOf('.'));
  if (org && REGISTERED_ORGS.has(org)) return type;
  throw new DomainError('event_type_unmapped', 500, `The run's event log holds the type "${type}", which the v2 event codemap does not map and no registered vendor org owns.`);
}

/** What a major-2 rendering of one run's events needs beyond the events. */
export interface V2EventContext {
  /** The caller's tenant (the run's): ids are bound to it. */
  tenant: string;
  /** The run's owner as `run.started` renders it. */
  owner: { tenant: string; workspace?: string; subject: Subject };
}

const bind = (tenant: string, v: unknown): unknown => (typeof v === 'string' && !v.includes('/') && OPAQUE.test(v) ? `${tenant}/${v}` : v);

function v2Payload(type: string, payload: Record<string, unknown>, ctx: V2EventContext): Record<string, unknown> {
  const def = PAYLOADS.get(type);
  if (!def) return payload;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(payload ?? {})) {
    const declared = def.props.get(k);
    if (declared !== undefined) out[k] = declared ? bind(ctx.tenant, v) : v;
    else if (!def.closed || HATCH.test(k)) out[k] = v;
    else out[`x-${k}`] = v;
  }
  if (type === 'run.started') out.owner = ctx.owner;
  if (type === 'interrupt.resolved') Object.assign(out, approvalOutcome(payload));
  // A failure's code as v2 spells it (v2-envelope.ts: a rejected approval is approval_rejected).
  if ('error' in out) out.error = v2RunError(out.error);
  return out;
}

/**
 * An approval's `action` and `decision` on its v2 `interrupt.resolved` (interrupt.md §Rejection, RFC 0183,
 * RFC 0223), read from what the log records at both majors: the resume value's accept / reject, and
 * `reason: "timeout"` when the host's timer closed the gate (`action: "timeout"`, always rejected). The
 * v1 payload keeps its recorded keys only.
 */
function approvalOutcome(payload: Record<string, unknown>): { action?: string; decision?: string } {
  if (payload?.kind !== undefined && payload.kind !== 'approval') return {};
  if (payload?.reason === 'timeout') return { action: 'timeout', decision: 'rejected' };
  const action = (payload?.resumeValue as { action?: unknown } | undefined)?.action;
  if (action === 'reject') return { action, decision: 'rejected' };
  if (action === 'accept') return { action, decision: 'granted' };
  return {};
}

/** One stored event as the v2 RunEventDoc (`schemas/v2/run-event.schema.json`). */
export function toV2Event(e: RunEventView, ctx: V2EventContext): Record<string, unknown> {
  const type = v2EventType(e.type);
  return {
    eventId: e.eventId,
    runId: bind(ctx.tenant, e.runId),
    ...(e.nodeId !== undefined ? { nodeId: e.nodeId } : {}),
    type,
    payload: v2Payload(type, e.payload, ctx),
    timestamp: e.timestamp,
    sequence: e.sequence - 1,
    schemaVersion: 1,
    ...(e.causationId !== undefined ? { causationId: e.causationId } : {}),
  };
}

/** The stored sequence after which a major-2 cursor (`afterSequence`, `Last-Event-ID`: a v2 sequence) reads. */
export function storedAfter(v2Sequence: number): number {
  return v2Sequence + 1;
}
