/**
 * The constants and checks of the official conformance suite's `lib/toolCatalog.ts`
 * (openwop/openwop conformance/src/lib), restated so test/conformance/ can assert exactly what the
 * official tool-catalog scenarios assert.
 */
export const TOOL_SOURCES = ['node-pack', 'workflow', 'mcp', 'connector', 'host-extension'];
export const SAFETY_TIERS = ['pure', 'read', 'write', 'exec'];
export const TOOL_CONTENT_FORBIDDEN = ['secret', 'credential', 'credentials', 'token', 'apiKey', 'password'];
export const COMPACT_DROPPED_FIELDS = ['outputSchema', 'auth', 'egress', 'approval', 'replayPolicy', 'costHint', 'latencyHint'];
export const COMPACT_INPUT_SCHEMA_BANNED = ['$ref', 'oneOf', 'allOf', 'anyOf', 'not', 'patternProperties', 'dependentSchemas'];

/** The suite's walk: keywords at every schema position (property names are not keywords). */
export function findBannedInputSchemaKeyword(schema: unknown): string | null {
  if (!schema || typeof schema !== 'object' || Array.isArray(schema)) return null;
  const s = schema as Record<string, unknown>;
  for (const k of COMPACT_INPUT_SCHEMA_BANNED) if (k in s) return k;
  if (s.properties && typeof s.properties === 'object') {
    for (const v of Object.values(s.properties as Record<string, unknown>)) {
      const hit = findBannedInputSchemaKeyword(v);
      if (hit) return hit;
    }
  }
  for (const k of ['items', 'additionalProperties', 'contains', 'propertyNames']) {
    const hit = findBannedInputSchemaKeyword(s[k]);
    if (hit) return hit;
  }
  if (Array.isArray(s.prefixItems)) {
    for (const v of s.prefixItems) {
      const hit = findBannedInputSchemaKeyword(v);
      if (hit) return hit;
    }
  }
  return null;
}

/** The scopes the conformance API key holds in these tests (no tool-specific scope). */
export const CONFORMANCE_KEY_SCOPES = ['tools:read', 'runs:read', 'runs:create'];

/** A host-extension tool behind a scope the conformance key lacks: the OPENWOP_CROSS_PRINCIPAL_TOOL_ID. */
export const CROSS_PRINCIPAL_TOOL_ID = 'x-host-conformance-scoped';

export const CONFORMANCE_CONFIG = {
  tools: {
    hostExtensions: [
      {
        toolId: CROSS_PRINCIPAL_TOOL_ID,
        title: 'Scoped tool',
        description: 'Visible only to principals holding tools:conformance:hidden.',
        safetyTier: 'write',
        auth: { scopes: ['tools:conformance:hidden'], credentialRef: true },
      },
      {
        toolId: 'x-host-conformance-nested',
        title: 'Nested schema',
        safetyTier: 'read',
        inputSchema: {
          type: 'object',
          properties: {
            target: { oneOf: [{ type: 'string' }, { $ref: '#/$defs/ref' }] },
            filters: { type: 'array', items: { allOf: [{ type: 'object', properties: { k: { type: 'string' } } }] } },
            meta: { type: 'object', patternProperties: { '^x-': { type: 'string' } }, not: { required: ['forbidden'] } },
          },
          dependentSchemas: { target: { required: ['filters'] } },
          $defs: { ref: { type: 'object', properties: { id: { type: 'string' } } } },
        },
      },
    ],
  },
};
