import type { SchemaObject } from '@nestjs/swagger/dist/interfaces/open-api-spec.interface';
import { NEXT_CURSOR_PROPERTY } from '../../platform/pagination/page-query';

export const APPROVAL_SCHEMA: SchemaObject = {
  type: 'object',
  required: ['id', 'state', 'kind', 'title', 'subject', 'runId', 'nodeId', 'workflowId', 'link', 'requiredScope', 'requiredRole', 'quorum', 'granted', 'denied', 'rejectionPolicy', 'allowSelfApproval', 'namedVotersRecordedBy', 'resumeSchema', 'data', 'resolvedBy', 'decisions', 'artifactRef', 'requestedBy', 'reason', 'expiresAt', 'createdAt', 'decidedAt'],
  properties: {
    id: { type: 'string', format: 'uuid' },
    state: { type: 'string', enum: ['pending', 'granted', 'denied', 'expired', 'cancelled'] },
    kind: {
      type: 'string',
      enum: ['approval', 'clarification', 'external-event', 'credential'],
      description: 'The interrupt kind. `approval` gates are granted or denied; a run step’s `clarification` or `external-event` interrupt is resolved with a value (`POST /v1/approvals/{id}/resolve`, or the run-scoped route) and can be denied; a `credential` interrupt (RFC 0199) is resolved by the host once the run’s starter has authorized the connection (`{outcome: authorized}` is refused before that), or declined.',
    },
    title: { type: 'string', description: 'What the approvers are asked: a run step’s `core.approval` title (or the tool call it allows), a proposal’s title.' },
    subject: {
      type: 'object',
      required: ['kind', 'id'],
      description: 'What the gate releases: `run-node` (a step of a run; `id` is the run id) or `proposal` (`id` is the proposal id).',
      properties: { kind: { type: 'string' }, id: { type: 'string' } },
    },
    runId: { type: 'string', nullable: true, description: 'The run whose step waits on the gate (null for a proposal’s gate).' },
    nodeId: { type: 'string', nullable: true, description: 'The node of that run that waits on the gate.' },
    workflowId: { type: 'string', nullable: true, description: 'The workflow (chain) the run executes.' },
    link: {
      type: 'string',
      description:
        'Where a person sees the subject, relative to the host’s base URL: the operator console’s page of the run or proposal (`/console/#/runs/<runId>`, `/console/#/proposals/<id>`) when the console is served, else its API resource (`/v1/runs/<runId>`, `/v1/proposals/<id>`).',
    },
    requiredScope: { type: 'string' },
    requiredRole: { type: 'string', nullable: true },
    quorum: { type: 'integer', minimum: 1 },
    granted: { type: 'integer', minimum: 0 },
    denied: { type: 'integer', minimum: 0 },
    rejectionPolicy: { type: 'string', enum: ['single-veto', 'majority'], description: '`single-veto`: one denial closes the gate; `majority`: denials from more than half of the quorum close it.' },
    allowSelfApproval: {
      type: 'boolean',
      description: 'Whether `requestedBy` (a run’s owner, a proposal’s applier) may approve the gate; when false its grants, and grants recorded for it, answer 403.',
    },
    namedVotersRecordedBy: {
      type: 'string',
      nullable: true,
      description: 'The scope the workflow designated to record votes for named voters on this gate (`core.approval namedVoters.recordedBy`); besides it only `approvals:act-as` may vote for another voter.',
    },
    resumeSchema: { type: 'object', nullable: true, additionalProperties: true, description: 'The JSON Schema a resolving value must satisfy.' },
    data: { type: 'object', nullable: true, additionalProperties: true, description: 'The kind’s data: clarification `questions`; an external event’s `eventType` and `correlation`.' },
    resolvedBy: { type: 'string', nullable: true, description: 'Who closed the gate: the last voter of a quorum, the resolving principal, or `token:<id>` for a signed-token callback.' },
    decisions: {
      type: 'array',
      items: {
        type: 'object',
        required: ['principal', 'decision', 'decidedAt'],
        properties: {
          principal: { type: 'string', description: 'Whom the decision counts for: the voter the resume value named, else the deciding principal. Voters are distinct by their canonical form (NFKC, trimmed, case-folded).' },
          decision: { type: 'string', enum: ['granted', 'denied'] },
          submittedBy: { type: 'string', description: 'The authenticated principal that cast the decision, when it cast it for another voter (acting-as).' },
          reason: { type: 'string' },
          decidedAt: { type: 'string', format: 'date-time' },
        },
      },
    },
    artifactRef: { type: 'string' },
    requestedBy: { type: 'string' },
    reason: { type: 'string', nullable: true },
    expiresAt: { type: 'string', format: 'date-time' },
    createdAt: { type: 'string', format: 'date-time' },
    decidedAt: { type: 'string', nullable: true, format: 'date-time' },
  },
};

export const APPROVAL_LIST_SCHEMA: SchemaObject = {
  type: 'object',
  required: ['approvals', 'nextCursor'],
  properties: { approvals: { type: 'array', items: APPROVAL_SCHEMA }, nextCursor: NEXT_CURSOR_PROPERTY },
};
