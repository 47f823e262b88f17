import { InvariantViolation } from '../errors/internal-fault';

/**
 * How an event's type and payload are stored (migration 1765400000000, issue 41: bytes per run).
 *
 * The run engine's own event types are stored as a small number (`code`, 2 bytes) instead of their
 * text (12 to 15 bytes); any other type keeps its text in `type` (and code 0). Codes are fixed here
 * and in the SQL function `event_type_name(code, type)`, which SQL readers (the webhook outbox
 * trigger) use: a new code needs a migration that redefines that function, never a renumbering.
 *
 * A coded event whose payload starts with `nodeId` equal to the event's own `node_id` (every node
 * event the engine writes) is stored without that key, and `code` carries NODE_ID_LEFT_OUT: the
 * payload is given back with `nodeId` first again, so its keys come back in the order written.
 */
export const EVENT_TYPE_CODES: readonly string[] = [
  '',
  'run.started',
  'run.completed',
  'run.failed',
  'run.cancelled',
  'run.paused',
  'run.resumed',
  'node.started',
  'node.completed',
  'node.failed',
  'node.suspended',
  'node.retried',
  'node.skipped',
  'node.cancelled',
  'node.resumed',
];

/** The flag of `code`: the payload's leading `nodeId` (the event's `node_id`) was left out. */
export const NODE_ID_LEFT_OUT = 1024;

const CODE_OF = new Map(EVENT_TYPE_CODES.map((t, i) => [t, i] as const).filter(([t]) => t !== ''));

/**
 * The tenant an event row keeps (migration 1765400010000): a tool call's (the tool-call index and log
 * look them up by tenant), no other's: every other read finds a stream's events by the key of the
 * tenant's stream row. `e` is the alias of the rows being inserted (their stored type).
 */
export const TOOL_CALL_TENANT = (e: string) => `CASE WHEN ${e}."type" = 'agent.toolCalled' THEN ${e}."tenant" END`;

/** The SQL expression of an event's type name (`e` the event's alias): the code's name, or the stored text. */
export const EVENT_TYPE_SQL = (e: string) => `"event_type_name"(${e}."code", ${e}."type")`;

/** An event as stored: its code, its type's text when it has no code, its payload as written to the row. */
export interface StoredForm {
  code: number;
  type: string | null;
  payload: Record<string, unknown>;
}

/** The stored form of an event of `type` with `payload` and envelope `nodeId`. */
export function storedForm(type: string, payload: Record<string, unknown>, nodeId: string | null | undefined): StoredForm {
  const code = CODE_OF.get(type);
  if (code === undefined) return { code: 0, type, payload };
  if (nodeId != null && payload && typeof payload === 'object' && !Array.isArray(payload)) {
    for (const k in payload) {
      // Only a leading nodeId, equal to the envelope's: the payload comes back with its keys in the same order.
      if (k === 'nodeId' && payload.nodeId === nodeId) {
        const { nodeId: _left, ...rest } = payload;
        return { code: code | NODE_ID_LEFT_OUT, type: null, payload: rest };
      }
      break;
    }
  }
  return { code, type: null, payload };
}

/** The type and payload of a stored event (its `code`, `type`, `payload` and `node_id` columns). */
export function readForm(code: number | string | null | undefined, type: string | null, payload: Record<string, unknown>, nodeId: string | null): { type: string; payload: Record<string, unknown> } {
  const c = Number(code ?? 0);
  const name = type ?? EVENT_TYPE_CODES[c & (NODE_ID_LEFT_OUT - 1)];
  if (name === undefined || name === '') throw new InvariantViolation(`an event has the unknown type code ${c}`);
  return { type: name, payload: c & NODE_ID_LEFT_OUT ? { nodeId, ...payload } : payload };
}
