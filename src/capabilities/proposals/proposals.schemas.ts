import type { SchemaObject } from '@nestjs/swagger/dist/interfaces/open-api-spec.interface';
import { protocolSchemaRef } from '../../platform/openapi/protocol-schemas';
import { NEXT_CURSOR_PROPERTY } from '../../platform/pagination/page-query';

export const PROPOSAL_LIST_SCHEMA: SchemaObject = {
  type: 'object',
  required: ['proposals', 'nextCursor'],
  properties: { proposals: { type: 'array', items: protocolSchemaRef('Proposal') }, nextCursor: NEXT_CURSOR_PROPERTY },
};

export const APPLY_RESULT_SCHEMA: SchemaObject = {
  type: 'object',
  required: ['status', 'proposal'],
  properties: {
    status: { type: 'string', enum: ['applied', 'pending-approval'] },
    installedArtifactRef: { type: 'string', description: '`sha256:<hex>` of the installed bytes: the artifact JSON text exactly as stored (when applied).' },
    approvalId: { type: 'string', nullable: true, description: 'The approval gate that released the install (null for direct-rbac).' },
    pendingApprovalId: { type: 'string', description: 'The approval gate opened (approval-gate activation, 202).' },
    proposal: protocolSchemaRef('Proposal'),
  },
};

export const SYNTHESIS_REPORT_SCHEMA: SchemaObject = {
  type: 'object',
  required: ['scopes', 'runsExamined', 'drafts', 'created', 'alreadyProposed', 'failures'],
  properties: {
    scopes: { type: 'integer' },
    runsExamined: { type: 'integer' },
    drafts: { type: 'integer' },
    created: { type: 'array', items: { type: 'string' } },
    alreadyProposed: { type: 'integer' },
    failures: {
      type: 'array',
      items: { type: 'object', required: ['synthesizer', 'message'], properties: { synthesizer: { type: 'string' }, message: { type: 'string' } } },
    },
  },
};

export const PROMPT_TEMPLATE_ENTRY_SCHEMA: SchemaObject = {
  type: 'object',
  required: ['template', 'ref', 'origin'],
  properties: {
    template: { type: 'object', additionalProperties: true, description: 'The installed RFC 0027 PromptTemplate, byte-for-byte.' },
    ref: { type: 'string' },
    origin: { type: 'string' },
  },
};

export const AUTOMATION_LIST_SCHEMA: SchemaObject = {
  type: 'object',
  required: ['automations', 'nextCursor'],
  properties: {
    nextCursor: NEXT_CURSOR_PROPERTY,
    automations: {
      type: 'array',
      items: {
        type: 'object',
        required: ['name', 'enabled', 'schedule', 'action', 'artifactRef', 'nextRunAt', 'lastRunAt', 'lastRunId', 'lastRunStatus', 'runCount'],
        properties: {
          name: { type: 'string' },
          workspace: { type: 'string' },
          enabled: { type: 'boolean' },
          schedule: { type: 'object', additionalProperties: true },
          action: { type: 'object', additionalProperties: true },
          artifactRef: { type: 'string' },
          nextRunAt: { type: 'string', nullable: true, format: 'date-time' },
          lastRunAt: { type: 'string', nullable: true, format: 'date-time' },
          lastRunId: { type: 'string', nullable: true },
          lastRunStatus: { type: 'string', nullable: true, description: 'Status of the last run (a RunSnapshot status; failed when its workflow could not start).' },
          runCount: { type: 'integer' },
        },
      },
    },
  },
};
