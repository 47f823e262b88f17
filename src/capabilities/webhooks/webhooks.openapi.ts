import { NEXT_CURSOR_PROPERTY } from '../../platform/pagination/page-query';
/** OpenAPI shapes of the webhooks capability's responses. */

const WEBHOOK_FIELDS = {
  webhookId: { type: 'string', description: 'wh_<hex>' },
  url: { type: 'string', format: 'uri' },
  events: { type: 'array', items: { type: 'string' } },
  tags: { type: 'array', items: { type: 'string' } },
  workspace: { type: 'string', description: 'The workspace the subscription is bound to (registered by a workspace-bound credential).' },
  secretFingerprint: { type: 'string', description: 'First 8 hex characters of sha256(secret).' },
  signatureAlgorithm: { type: 'string', enum: ['v1'], description: 'The signature scheme deliveries are signed with.' },
  createdAt: { type: 'string', format: 'date-time' },
};

export const WEBHOOK_VIEW = {
  type: 'object',
  required: ['webhookId', 'url', 'events', 'secretFingerprint', 'signatureAlgorithm', 'createdAt'],
  properties: WEBHOOK_FIELDS,
};

export const WEBHOOK_REGISTRATION = {
  type: 'object',
  required: ['webhookId', 'secret', 'url', 'events', 'secretFingerprint', 'signatureAlgorithm', 'createdAt'],
  properties: {
    ...WEBHOOK_FIELDS,
    secret: { type: 'string', description: 'The signing secret (64 hex characters). Returned once, at registration; never readable again.' },
  },
};

export const WEBHOOK_LIST = {
  type: 'object',
  required: ['webhooks', 'nextCursor'],
  properties: { webhooks: { type: 'array', items: WEBHOOK_VIEW }, nextCursor: NEXT_CURSOR_PROPERTY },
};

export const DELIVERY_VIEW = {
  type: 'object',
  required: ['deliveryId', 'webhookId', 'runId', 'sequence', 'eventType', 'status', 'attempts', 'createdAt'],
  properties: {
    deliveryId: { type: 'string', format: 'uuid', description: 'Also sent as the X-openwop-Delivery-Id header.' },
    webhookId: { type: 'string' },
    runId: { type: 'string' },
    sequence: { type: 'integer' },
    eventType: { type: 'string' },
    status: { type: 'string', enum: ['pending', 'delivering', 'succeeded', 'failed'] },
    attempts: { type: 'integer', description: 'Attempts made so far.' },
    nextAttemptAt: { type: 'string', format: 'date-time', description: 'When the next attempt is due (pending and delivering only).' },
    lastStatusCode: { type: 'integer', description: "The receiver's HTTP status of the last attempt, when it answered." },
    lastError: { type: 'string', description: 'Why the last attempt failed.' },
    deliveredAt: { type: 'string', format: 'date-time' },
    createdAt: { type: 'string', format: 'date-time' },
  },
};

export const DELIVERY_LIST = {
  type: 'object',
  required: ['deliveries', 'nextCursor'],
  properties: { deliveries: { type: 'array', items: DELIVERY_VIEW }, nextCursor: NEXT_CURSOR_PROPERTY },
};

export const SURFACE_RESULT = {
  type: 'object',
  description: 'register: {webhookId, secretFingerprint}; list: {webhooks}; unregister: {unregistered: true}.',
  properties: {
    webhookId: { type: 'string' },
    secretFingerprint: { type: 'string' },
    webhooks: { type: 'array', items: WEBHOOK_VIEW },
    unregistered: { type: 'boolean' },
  },
};

export const ROTATION = {
  type: 'object',
  required: ['webhookId', 'rotatedAt', 'previousSecretExpiresAt'],
  properties: {
    webhookId: { type: 'string' },
    rotatedAt: { type: 'string', format: 'date-time' },
    previousSecretExpiresAt: { type: 'string', format: 'date-time', description: 'rotatedAt + webhooks.secretRotation.overlapSeconds: until then the previous secret signs beside the new one.' },
  },
};

export const DEAD_LETTER_VIEW = {
  type: 'object',
  required: ['deliveryId', 'webhookId', 'runId', 'sequence', 'eventType', 'attempts', 'deadLetteredAt', 'expiresAt'],
  properties: {
    deliveryId: { type: 'string' },
    webhookId: { type: 'string' },
    runId: { type: 'string' },
    sequence: { type: 'integer' },
    eventType: { type: 'string' },
    attempts: { type: 'integer' },
    lastStatusCode: { type: 'integer' },
    lastError: { type: 'string' },
    deadLetteredAt: { type: 'string', format: 'date-time' },
    expiresAt: { type: 'string', format: 'date-time', description: 'deadLetteredAt + webhooks.deadLetter.retentionDays.' },
  },
};

export const DEAD_LETTER_LIST = {
  type: 'object',
  required: ['deliveries', 'nextCursor'],
  properties: { deliveries: { type: 'array', items: DEAD_LETTER_VIEW }, nextCursor: NEXT_CURSOR_PROPERTY },
};
