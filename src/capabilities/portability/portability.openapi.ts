import { protocolSchemaRef } from '../../platform/openapi/protocol-schemas';

/** OpenAPI shapes of the import answers (the protocol publishes no schema for them). */

const KIND = { type: 'string', enum: ['agent', 'pack', 'prompt-template', 'connection-ref', 'schedule', 'roster', 'org-chart'] };
const STRINGS = { type: 'array', items: { type: 'string' } };
const VIOLATIONS = {
  type: 'array',
  items: { type: 'object', required: ['path', 'message'], properties: { path: { type: 'string' }, code: { type: 'string' }, message: { type: 'string' } } },
};
const ENTRY = {
  type: 'object',
  required: ['ref', 'kind', 'reason'],
  properties: { ref: { type: 'string' }, kind: KIND, reason: { type: 'string' } },
};

export const IMPORT_REQUEST_SCHEMA = {
  description: 'An ExportBundle, raw or wrapped as {"bundle": ...}.',
  oneOf: [
    protocolSchemaRef('ExportBundle'),
    { type: 'object', required: ['bundle'], additionalProperties: false, properties: { bundle: protocolSchemaRef('ExportBundle') } },
  ],
};

export const IMPORT_PLAN_SCHEMA = {
  title: 'ImportPlan',
  type: 'object',
  required: ['dryRun', 'bundleVersion', 'bundleOrigin', 'itemCount', 'order', 'items', 'counts', 'secretsToRebind'],
  properties: {
    dryRun: { type: 'boolean', enum: [true] },
    migrated: { type: 'boolean', enum: [false] },
    bundleVersion: { type: 'string' },
    bundleOrigin: { type: 'string' },
    itemCount: { type: 'integer' },
    byKind: { type: 'object', additionalProperties: { type: 'integer' } },
    order: { ...STRINGS, description: 'Item refs in apply (topological) order.' },
    items: {
      type: 'array',
      items: {
        type: 'object',
        required: ['ref', 'kind', 'action', 'reason'],
        properties: {
          ref: { type: 'string' },
          kind: KIND,
          action: { type: 'string', enum: ['create', 'update', 'skip', 'conflict'] },
          reason: { type: 'string' },
          targetId: { type: 'string' },
          secretsToRebind: STRINGS,
          violations: VIOLATIONS,
        },
      },
    },
    creates: { type: 'array', items: ENTRY },
    updates: { type: 'array', items: ENTRY },
    skips: { type: 'array', items: ENTRY },
    conflicts: { type: 'array', items: ENTRY },
    counts: {
      type: 'object',
      required: ['create', 'update', 'skip', 'conflict'],
      properties: { create: { type: 'integer' }, update: { type: 'integer' }, skip: { type: 'integer' }, conflict: { type: 'integer' } },
    },
    secretsToRebind: { ...STRINGS, description: 'Credential references (provider ids or refs) to bind again at the destination.' },
  },
};

export const IMPORT_RESULT_SCHEMA = {
  title: 'ImportResult',
  type: 'object',
  required: ['dryRun', 'bundleVersion', 'bundleOrigin', 'itemCount', 'order', 'items', 'counts', 'secretsToRebind'],
  properties: {
    dryRun: { type: 'boolean', enum: [false] },
    migrated: { type: 'boolean', enum: [true] },
    bundleVersion: { type: 'string' },
    bundleOrigin: { type: 'string' },
    itemCount: { type: 'integer' },
    order: STRINGS,
    refs: STRINGS,
    items: {
      type: 'array',
      items: {
        type: 'object',
        required: ['ref', 'kind', 'action', 'result'],
        properties: {
          ref: { type: 'string' },
          kind: KIND,
          action: { type: 'string', enum: ['created', 'updated', 'skipped', 'failed'] },
          result: { type: 'string', enum: ['created', 'updated', 'skipped', 'failed'] },
          reason: { type: 'string' },
          targetId: { type: 'string' },
          secretsToRebind: STRINGS,
        },
      },
    },
    counts: {
      type: 'object',
      required: ['created', 'updated', 'skipped', 'failed'],
      properties: { created: { type: 'integer' }, updated: { type: 'integer' }, skipped: { type: 'integer' }, failed: { type: 'integer' } },
    },
    conflicts: { type: 'array', items: ENTRY },
    secretsToRebind: STRINGS,
    imported: { type: 'integer' },
  },
};
