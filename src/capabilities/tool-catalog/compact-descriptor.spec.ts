import { compactInputSchema, findBannedKeyword, toCompact } from './compact-descriptor';

describe('compact descriptors', () => {
  it('keeps only toolId, source, safetyTier, title, description and inputSchema', () => {
    const c = toCompact({
      toolId: 'mcp:fs.read',
      source: 'mcp',
      title: 'Read',
      description: 'Reads',
      inputSchema: { type: 'object', properties: { p: { type: 'string' } } },
      outputSchema: { type: 'object' },
      auth: { scopes: ['a:b'], credentialRef: true },
      egress: 'none',
      approval: 'never',
      replayPolicy: 'idempotent',
      safetyTier: 'read',
      costHint: 'low',
      latencyHint: 'low',
    });
    expect(c).toEqual({ toolId: 'mcp:fs.read', source: 'mcp', title: 'Read', description: 'Reads', safetyTier: 'read', inputSchema: { type: 'object', properties: { p: { type: 'string' } } } });
  });

  it('inlines local $refs, merges allOf, widens oneOf/anyOf and drops not/patternProperties/dependentSchemas at every depth', () => {
    const flat = compactInputSchema({
      type: 'object',
      required: ['a'],
      properties: {
        a: { $ref: '#/$defs/A' },
        b: { oneOf: [{ type: 'string' }, { type: 'integer' }] },
        c: { anyOf: [{ const: 'x' }, { enum: ['y', 'z'] }] },
        d: { type: 'array', items: { allOf: [{ type: 'object', properties: { k: { type: 'string' } }, required: ['k'] }, { properties: { v: { not: { type: 'null' } } } }] } },
        e: { type: 'object', patternProperties: { '^x': { type: 'string' } }, additionalProperties: false },
        oneOf: { type: 'string', description: 'a property named like a keyword is data' },
      },
      dependentSchemas: { a: { required: ['b'] } },
      $defs: { A: { type: 'object', properties: { self: { $ref: '#/$defs/A' }, n: { type: 'number', minimum: 0 } } } },
    });
    expect(findBannedKeyword(flat)).toBeNull();
    expect(flat).toEqual({
      type: 'object',
      required: ['a'],
      properties: {
        a: { type: 'object', properties: { self: {}, n: { type: 'number', minimum: 0 } } },
        b: { type: ['string', 'integer'] },
        c: { enum: ['x', 'y', 'z'] },
        d: { type: 'array', items: { type: 'object', required: ['k'], properties: { k: { type: 'string' }, v: {} } } },
        e: { type: 'object' },
        oneOf: { type: 'string', description: 'a property named like a keyword is data' },
      },
    });
  });

  it('makes any input schema an object with properties', () => {
    expect(compactInputSchema({ type: 'string' })).toEqual({ type: 'object', properties: {} });
    expect(compactInputSchema({ $ref: 'https://example.com/remote.json' })).toEqual({ type: 'object', properties: {} });
    expect(compactInputSchema({ allOf: [{ type: 'object', properties: { q: { type: 'string' } } }] })).toEqual({ type: 'object', properties: { q: { type: 'string' } } });
  });

  it('finds banned keywords only at schema positions', () => {
    expect(findBannedKeyword({ type: 'object', properties: { x: { type: 'array', items: { anyOf: [] } } } })).toBe('/properties/x/items/anyOf');
    expect(findBannedKeyword({ type: 'object', properties: { $ref: { type: 'string' } } })).toBeNull();
    expect(findBannedKeyword({ prefixItems: [{ not: {} }] })).toBe('/prefixItems/0/not');
  });
});
