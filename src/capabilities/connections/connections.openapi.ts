/** OpenAPI shapes of the connections capability's own (non-protocol) responses. */

const SCOPE_GROUP = {
  type: 'object',
  required: ['key', 'label', 'access', 'scopes'],
  properties: {
    key: { type: 'string' },
    label: { type: 'string' },
    access: { type: 'string', enum: ['read', 'write'] },
    scopes: { type: 'array', items: { type: 'string' } },
  },
};

export const CONNECTION_PACK_VIEW = {
  type: 'object',
  required: ['name', 'version', 'providerId', 'displayName', 'category', 'ref', 'installedBy', 'installedAt', 'updatedAt', 'manifest'],
  properties: {
    name: { type: 'string' },
    version: { type: 'string' },
    providerId: { type: 'string' },
    displayName: { type: 'string' },
    category: { type: 'string' },
    ref: { type: 'string', description: 'sha256:<hex> of the installed bytes (the manifest JSON text as submitted).' },
    installedBy: { type: 'string' },
    installedAt: { type: 'string', format: 'date-time' },
    updatedAt: { type: 'string', format: 'date-time' },
    manifest: { $ref: '#/components/schemas/ConnectionPackManifest' },
  },
};

export const INSTALL_RESULT = {
  type: 'object',
  required: ['outcome', 'pack'],
  properties: { outcome: { type: 'string', enum: ['created', 'updated', 'unchanged'] }, pack: CONNECTION_PACK_VIEW },
};

export const PROVIDER_RESOLUTION = {
  type: 'object',
  required: ['providerId', 'resolved'],
  properties: {
    providerId: { type: 'string' },
    resolved: { type: 'boolean' },
    source: { type: 'string', enum: ['pack', 'builtin'] },
    version: { type: 'string' },
    packName: { type: 'string' },
    code: { type: 'string', enum: ['connection_provider_unresolved', 'connection_provider_conflict'] },
    heldBy: { type: 'string' },
    provider: { type: 'object', description: 'The provider definition (connection-pack-manifest `provider`).' },
  },
};

export const CONSENT_PLAN = {
  type: 'object',
  required: ['providerId', 'scopeModel', 'steps'],
  properties: {
    providerId: { type: 'string' },
    scopeModel: { type: 'string', enum: ['groups', 'coarse', 'capabilities'] },
    steps: {
      type: 'array',
      description: 'Read groups first; write groups in a separate, later re-consent step.',
      items: { type: 'object', required: ['groups', 'includesWrite'], properties: { groups: { type: 'array', items: SCOPE_GROUP }, includesWrite: { type: 'boolean' } } },
    },
  },
};

export const EGRESS_DECISION = {
  type: 'object',
  required: ['allowed'],
  properties: {
    allowed: { type: 'boolean' },
    matched: { type: 'string', description: 'The apiHosts entry that matched.' },
    code: { type: 'string', enum: ['no_api_hosts', 'host_not_allowed', 'connection_provider_unresolved', 'connection_provider_conflict'] },
  },
};

export const CONNECTION_VIEW = {
  type: 'object',
  required: ['id', 'name', 'provider', 'credentialRef', 'credentialBound', 'previousCredentialExpiresAt', 'origin', 'createdBy', 'createdAt', 'updatedAt'],
  properties: {
    id: { type: 'string', format: 'uuid' },
    name: { type: 'string' },
    provider: { type: 'string' },
    credentialRef: { type: 'string', nullable: true, description: 'Opaque reference (cred:<id>); never the credential.' },
    credentialBound: { type: 'boolean' },
    previousCredentialExpiresAt: {
      type: 'string',
      format: 'date-time',
      nullable: true,
      description: 'A two-key-overlap rotation in progress (RFC 0046 §D): until then the credential the last rotation replaced is still offered when the provider refuses the new one. Null: no overlap.',
    },
    origin: { type: 'string', enum: ['api', 'import'] },
    createdBy: { type: 'string' },
    createdAt: { type: 'string', format: 'date-time' },
    updatedAt: { type: 'string', format: 'date-time' },
  },
};

export const SEAM_INSTALL_RESULT = {
  type: 'object',
  required: ['installed'],
  properties: {
    installed: { type: 'boolean' },
    errors: {
      type: 'array',
      items: { type: 'object', required: ['code', 'message'], properties: { code: { type: 'string' }, path: { type: 'string' }, message: { type: 'string' } } },
    },
  },
};

export const CREDENTIAL_ECHO_SURFACES = {
  type: 'object',
  required: ['runId', 'credentialRef', 'inputs', 'variables', 'channels', 'events', 'snapshot', 'debugBundle'],
  description: 'Every observable surface of the echo run: the credential appears only as its reference.',
  properties: {
    runId: { type: 'string' },
    credentialRef: { type: 'string' },
    inputs: { type: 'object', additionalProperties: true },
    variables: { type: 'object', additionalProperties: true },
    channels: { type: 'array', items: { type: 'object', additionalProperties: true } },
    events: { type: 'array', items: { type: 'object', additionalProperties: true } },
    snapshot: { type: 'object', additionalProperties: true },
    debugBundle: { type: 'object', additionalProperties: true },
  },
};
