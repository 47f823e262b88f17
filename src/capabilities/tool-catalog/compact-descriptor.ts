import type { JsonSchemaObject, ToolDescriptor, ToolSafetyTier, ToolSourceKind } from '@openwop-host/plugin-sdk';

/** RFC 0112 compact descriptor: identity, tier and an LLM-friendly structural input schema only. */
export interface CompactToolDescriptor {
  toolId: string;
  source: ToolSourceKind;
  safetyTier: ToolSafetyTier;
  title?: string;
  description?: string;
  inputSchema?: { type: 'object'; properties: Record<string, JsonSchemaObject>; required?: string[] };
}

/** Keywords the compact subset forbids at every depth. */
export const COMPACT_BANNED_KEYWORDS = ['$ref', 'oneOf', 'allOf', 'anyOf', 'not', 'patternProperties', 'dependentSchemas'] as const;

/** Annotation and assertion keywords kept as-is (they carry no sub-schemas). */
const SCALAR_KEYWORDS = [
  'title', 'description', 'default', 'examples', 'enum', 'const', 'format',
  'minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf',
  'minLength', 'maxLength', 'pattern', 'minItems', 'maxItems', 'uniqueItems',
  'minProperties', 'maxProperties', 'readOnly', 'writeOnly', 'deprecated', 'contentMediaType', 'contentEncoding',
] as const;

const MAX_DEPTH = 12;

type Schema = Record<string, unknown>;

function isSchema(v: unknown): v is Schema {
  return !!v && typeof v === 'object' && !Array.isArray(v);
}

/** Resolves a local JSON Pointer `$ref` (`#/$defs/x`, `#/definitions/x`) against the root schema. */
function resolveLocalRef(root: Schema, ref: string): Schema | undefined {
  if (!ref.startsWith('#/')) return undefined;
  let cur: unknown = root;
  for (const raw of ref.slice(2).split('/')) {
    const key = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
    if (!isSchema(cur)) return undefined;
    cur = cur[key];
  }
  return isSchema(cur) ? cur : undefined;
}

function unionTypes(schemas: Schema[]): string[] | undefined {
  const types = new Set<string>();
  for (const s of schemas) {
    const t = s.type;
    if (typeof t === 'string') {
      types.add(t);
    } else if (Array.isArray(t)) {
      for (const x of t) if (typeof x === 'string') types.add(x);
    } else {
      return undefined; // one branch accepts any type: so does the union
    }
  }
  return [...types];
}

/**
 * Rewrites a schema into the structural subset: local `$ref`s are inlined, `allOf` branches merged,
 * `oneOf`/`anyOf` widened to the union of their types (an `enum` union when every branch is one),
 * and `not`/`patternProperties`/`dependentSchemas`/conditionals dropped. The result accepts at least
 * what the original accepted, so it may be looser but never refuses valid input.
 */
function flatten(schema: unknown, root: Schema, depth: number, seenRefs: ReadonlySet<string>): Schema {
  if (!isSchema(schema) || depth > MAX_DEPTH) return {};
  let s: Schema = schema;
  const refs = new Set(seenRefs);
  // Inline $ref chains (a recursive schema is cut at the first repeat: the node becomes unconstrained).
  while (typeof s.$ref === 'string') {
    const ref = s.$ref;
    if (refs.has(ref)) return {};
    refs.add(ref);
    const target = resolveLocalRef(root, ref);
    if (!target) return {};
    const { $ref: _ignored, ...rest } = s;
    s = { ...target, ...rest };
  }
  const out: Schema = {};
  for (const k of SCALAR_KEYWORDS) if (s[k] !== undefined) out[k] = s[k];
  if (s.type !== undefined) out.type = s.type;
  if (Array.isArray(s.required)) out.required = s.required.filter((r) => typeof r === 'string');

  const properties: Record<string, Schema> = {};
  if (isSchema(s.properties)) {
    for (const [name, sub] of Object.entries(s.properties)) properties[name] = flatten(sub, root, depth + 1, refs);
  }
  if (Array.isArray(s.allOf)) {
    for (const branch of s.allOf) {
      const f = flatten(branch, root, depth + 1, refs);
      if (isSchema(f.properties)) Object.assign(properties, f.properties);
      if (Array.isArray(f.required)) out.required = [...new Set([...((out.required as string[]) ?? []), ...(f.required as string[])])];
      if (out.type === undefined && f.type !== undefined) out.type = f.type;
      if (out.description === undefined && f.description !== undefined) out.description = f.description;
    }
  }
  for (const key of ['oneOf', 'anyOf'] as const) {
    const branches = s[key];
    if (!Array.isArray(branches) || out.type !== undefined) continue;
    const flat = branches.map((b) => flatten(b, root, depth + 1, refs));
    if (flat.length && flat.every((b) => Array.isArray(b.enum) || b.const !== undefined)) {
      out.enum = [...new Set(flat.flatMap((b) => (Array.isArray(b.enum) ? b.enum : [b.const])))];
    }
    const types = unionTypes(flat);
    if (types && types.length) out.type = types.length === 1 ? types[0] : types;
    if (types?.length === 1 && types[0] === 'object') {
      for (const b of flat) if (isSchema(b.properties)) Object.assign(properties, b.properties);
    }
  }
  if (Object.keys(properties).length || isSchema(s.properties)) out.properties = properties;
  if (isSchema(s.items)) out.items = flatten(s.items, root, depth + 1, refs);
  else if (Array.isArray(s.prefixItems) && s.prefixItems.length) {
    // A tuple becomes an array of the union of its members.
    const members = s.prefixItems.map((m) => flatten(m, root, depth + 1, refs));
    const types = unionTypes(members);
    out.items = types && types.length ? { type: types.length === 1 ? types[0] : types } : {};
  }
  if (typeof s.additionalProperties === 'boolean') out.additionalProperties = s.additionalProperties;
  else if (isSchema(s.additionalProperties)) out.additionalProperties = flatten(s.additionalProperties, root, depth + 1, refs);
  if (out.additionalProperties === false && (s.patternProperties !== undefined || s.allOf !== undefined || s.oneOf !== undefined || s.anyOf !== undefined)) {
    // Closed objects whose other members were dropped or merged must not start refusing them.
    delete out.additionalProperties;
  }
  return out;
}

/** The compact `inputSchema`: always `{type: "object", properties: {...}}` in the structural subset. */
export function compactInputSchema(inputSchema: JsonSchemaObject): CompactToolDescriptor['inputSchema'] {
  const flat = flatten(inputSchema, inputSchema, 0, new Set());
  const result: NonNullable<CompactToolDescriptor['inputSchema']> = {
    type: 'object',
    properties: isSchema(flat.properties) ? (flat.properties as Record<string, JsonSchemaObject>) : {},
  };
  if (Array.isArray(flat.required) && flat.required.length) result.required = flat.required as string[];
  if (typeof flat.description === 'string') (result as Schema).description = flat.description;
  if (flat.additionalProperties !== undefined) (result as Schema).additionalProperties = flat.additionalProperties;
  return result;
}

export function toCompact(d: ToolDescriptor): CompactToolDescriptor {
  const c: CompactToolDescriptor = { toolId: d.toolId, source: d.source, safetyTier: d.safetyTier };
  if (d.title !== undefined) c.title = d.title;
  if (d.description !== undefined) c.description = d.description;
  if (d.inputSchema !== undefined) c.inputSchema = compactInputSchema(d.inputSchema);
  return c;
}

/**
 * The first banned keyword in a schema, walking the same positions the conformance suite walks
 * (keywords only: property names are data, not keywords). Null when the schema is in the subset.
 */
export function findBannedKeyword(schema: unknown, path = ''): string | null {
  if (!isSchema(schema)) return null;
  for (const k of COMPACT_BANNED_KEYWORDS) if (k in schema) return `${path}/${k}`;
  if (isSchema(schema.properties)) {
    for (const [name, sub] of Object.entries(schema.properties)) {
      const hit = findBannedKeyword(sub, `${path}/properties/${name}`);
      if (hit) return hit;
    }
  }
  for (const k of ['items', 'additionalProperties', 'contains', 'propertyNames']) {
    const hit = findBannedKeyword(schema[k], `${path}/${k}`);
    if (hit) return hit;
  }
  if (Array.isArray(schema.prefixItems)) {
    for (let i = 0; i < schema.prefixItems.length; i++) {
      const hit = findBannedKeyword(schema.prefixItems[i], `${path}/prefixItems/${i}`);
      if (hit) return hit;
    }
  }
  return null;
}
