/** One OpenAPI 3 document whose operations become tools. */
export interface OpenApiDocumentOptions {
  /** Short id, part of every tool id: `x-host-<vendor>-<id>.<operationId>`. */
  id: string;
  /** Path of the document (JSON). One of `path` or `document`. */
  path?: string;
  /** The document inline. */
  document?: Record<string, unknown>;
  /** Base URL calls go to (default: the document's first `servers[].url`). */
  baseUrl?: string;
  /** Headers sent with every call (e.g. an API key). Never projected, logged or evented. */
  headers?: Record<string, string>;
  /** Scopes a principal needs to see and call these tools (`auth.scopes`). */
  scopes?: string[];
  /** Tenants that see these tools (default: every tenant). */
  tenants?: string[];
  /** Only operations with these operationIds (default: all). */
  operations?: string[];
}

export interface OpenApiToolsOptions {
  /** The vendor segment of tool ids (`x-host-<vendor>-...`). */
  vendor: string;
  documents: OpenApiDocumentOptions[];
  /** Deadline of one HTTP call (default 10000). */
  timeoutMs?: number;
}

export const OPENAPI_TOOLS_OPTIONS = Symbol.for('openwop-host.openapi-tools.options');

/** JSON Schema (2020-12) of the plugin's options, checked by the host before the plugin loads. */
export const OPTIONS_SCHEMA: Record<string, unknown> = {
  type: 'object',
  additionalProperties: false,
  required: ['vendor', 'documents'],
  properties: {
    vendor: { type: 'string', pattern: '^[a-z0-9]+$' },
    timeoutMs: { type: 'integer', minimum: 100, maximum: 120000 },
    documents: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['id'],
        oneOf: [{ required: ['path'] }, { required: ['document'] }],
        properties: {
          id: { type: 'string', pattern: '^[a-z0-9][a-z0-9_-]{0,63}$' },
          path: { type: 'string', minLength: 1 },
          document: { type: 'object' },
          baseUrl: { type: 'string', pattern: '^https?://' },
          headers: { type: 'object', additionalProperties: { type: 'string' } },
          scopes: { type: 'array', items: { type: 'string', minLength: 1 }, uniqueItems: true },
          tenants: { type: 'array', items: { type: 'string', minLength: 1 }, uniqueItems: true },
          operations: { type: 'array', items: { type: 'string', minLength: 1 } },
        },
      },
    },
  },
};
