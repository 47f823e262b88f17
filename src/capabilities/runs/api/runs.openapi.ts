import { protocolSchemaRef } from '../../../platform/openapi/protocol-schemas';
import { FORK_MODES, MAX_DIFF_EVENTS } from '../replay/run-fork.service';

/** The response schemas of the run routes in the OpenAPI document (runs and run-control controllers). */

export const SNAPSHOT = { schema: protocolSchemaRef('RunSnapshot') };
/** The 201 of POST /v1/runs: the RunSnapshot as created plus the run's URLs (rest-endpoints.md). */
export const CREATED = {
  schema: {
    allOf: [
      protocolSchemaRef('RunSnapshot'),
      {
        type: 'object',
        required: ['runId', 'status', 'eventsUrl', 'statusUrl'],
        properties: {
          eventsUrl: { type: 'string', format: 'uri', description: 'The run\'s SSE event stream (GET /v1/runs/{runId}/events).' },
          statusUrl: { type: 'string', format: 'uri', description: 'The run (GET /v1/runs/{runId}).' },
        },
      },
    ],
  },
  headers: {
    'openwop-idempotent-replay': { schema: { type: 'boolean' }, description: 'With an Idempotency-Key: `true` when the answer is the one recorded for an earlier request with the key, else `false`.' },
    'Preference-Applied': { schema: { type: 'string' }, description: '`wait=N` when the request\'s `Prefer: wait` was honoured: the run is answered as it was once it first stopped, or after N seconds.' },
  },
};
export const REPLAY = { 'openwop-idempotent-replay': { schema: { type: 'boolean' }, description: 'With an Idempotency-Key: `true` when the answer is the recorded one of an earlier request with the key.' } };
export const PAGE_SCHEMA = {
  type: 'object',
  required: ['runs', 'nextCursor'],
  properties: { runs: { type: 'array', items: protocolSchemaRef('RunSnapshot') }, nextCursor: { type: 'string', nullable: true, description: 'Cursor of the next page; null on the last page.' } },
};
export const DEFINITION_SCHEMA = {
  type: 'object',
  required: ['runId', 'workflowId', 'nodes', 'edges'],
  properties: {
    runId: { type: 'string' },
    workflowId: { type: 'string' },
    nodes: {
      type: 'array',
      description: 'The nodes in topological order.',
      items: {
        type: 'object',
        required: ['id', 'typeId', 'config'],
        properties: { id: { type: 'string' }, typeId: { type: 'string' }, config: { type: 'object', additionalProperties: true } },
      },
    },
    edges: {
      type: 'array',
      items: {
        type: 'object',
        required: ['from', 'to'],
        properties: { from: { type: 'string' }, to: { type: 'string' }, fromPort: { type: 'string' }, toPort: { type: 'string' } },
      },
    },
  },
};
export const FORK_SCHEMA = {
  type: 'object',
  required: ['runId', 'sourceRunId', 'fromSeq', 'mode', 'status', 'eventsUrl'],
  properties: {
    runId: { type: 'string', description: 'The new run.' },
    sourceRunId: { type: 'string' },
    fromSeq: { type: 'integer', minimum: 0 },
    mode: { type: 'string', enum: [...FORK_MODES] },
    status: { type: 'string', description: '`pending`, or `running` when the inherited history holds `run.started`.' },
    eventsUrl: { type: 'string', format: 'uri' },
    statusUrl: { type: 'string', format: 'uri' },
  },
};
export const DIFF_EVENT = { type: 'object', additionalProperties: true, description: 'A RunEvent (run-event.schema.json).' };
/** `getRunAncestry`'s answer (run-ancestry-response.schema.json): a parent on this host carries no `wellKnownUrl`. */
export const ANCESTRY_SCHEMA = {
  type: 'object',
  required: ['runId', 'hostId', 'parent'],
  additionalProperties: false,
  properties: {
    runId: { type: 'string' },
    hostId: { type: 'string' },
    parent: {
      type: 'object',
      nullable: true,
      required: ['runId', 'hostId', 'cause'],
      additionalProperties: false,
      properties: { runId: { type: 'string' }, hostId: { type: 'string' }, cause: { type: 'string', enum: ['core.subWorkflow'] } },
    },
  },
};

export const DIFF_SCHEMA = {
  type: 'object',
  required: ['a', 'b', 'eventDiffs', 'stateDiff'],
  additionalProperties: false,
  properties: {
    a: { type: 'string', description: 'The {runId} run.' },
    b: { type: 'string', description: 'The `against` run.' },
    divergedAtSeq: { type: 'integer', minimum: 0, nullable: true, description: 'The first sequence at which the logs differ; null when they are identical.' },
    eventDiffs: {
      type: 'array',
      items: {
        type: 'object',
        required: ['seq', 'op'],
        additionalProperties: false,
        properties: { seq: { type: 'integer', minimum: 0 }, op: { type: 'string', enum: ['added', 'removed', 'changed'] }, aEvent: DIFF_EVENT, bEvent: DIFF_EVENT },
      },
    },
    stateDiff: { type: 'object', additionalProperties: true, description: 'The state fields that differ (`status`, `variables`, `outputs`, `error`), each as `{a, b}`.' },
    truncated: { type: 'boolean', description: `Present (true) when a run is still in flight or has more than ${MAX_DIFF_EVENTS} events: only a prefix was compared.` },
  },
};

export const RUN_CONTROL_SCHEMA = {
  type: 'object',
  required: ['runId', 'status'],
  properties: { runId: { type: 'string' }, status: { type: 'string', enum: ['paused', 'running'] }, pausedAt: { type: 'string', format: 'date-time' }, resumedAt: { type: 'string', format: 'date-time' } },
};
export const BULK_CANCEL_SCHEMA = {
  type: 'object',
  required: ['results'],
  properties: {
    results: {
      type: 'array',
      items: {
        type: 'object',
        required: ['runId', 'ok'],
        properties: {
          runId: { type: 'string' },
          ok: { type: 'boolean' },
          status: { type: 'string', enum: ['cancelling', 'cancelled'] },
          error: {
            type: 'object',
            required: ['code', 'message'],
            properties: { code: { type: 'string', description: 'not_found, run_terminal, run_not_cancellable' }, message: { type: 'string' }, details: { type: 'object', additionalProperties: true } },
          },
        },
      },
    },
  },
};
