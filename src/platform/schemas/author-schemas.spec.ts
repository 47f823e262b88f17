import { AuthorSchemas, createAuthorAjv, SchemaNotCompiled } from './author-schemas';
import { MATCH_BUDGET } from './linear-regexp';

describe('AuthorSchemas (schemas the host did not write)', () => {
  const schemas = new AuthorSchemas();

  it('refuses what is not a JSON Schema, each problem at its path in the schema', () => {
    expect(schemas.problems({ type: 'bogus' })).toEqual([{ path: '/type', message: 'must be equal to one of the allowed values' }]);
    expect(schemas.problems({ type: 'object', properties: { n: { minimum: 'one' } } })).toEqual([{ path: '/properties/n/minimum', message: 'must be number' }]);
    expect(schemas.problems('a string')).toEqual([{ path: '', message: 'must be a JSON Schema (an object or a boolean)' }]);
    expect(schemas.problems({ $ref: '#/$defs/missing' })).toEqual([{ path: '', message: expect.stringContaining("can't resolve reference") }]);
    expect(schemas.problems({ $schema: 'http://json-schema.org/draft-07/schema#' })).toEqual([{ path: '/$schema', message: expect.any(String) }]);
    expect(() => schemas.compile({ type: 'bogus' })).toThrow(SchemaNotCompiled);
    expect(schemas.problems(true)).toEqual([]);
  });

  it('refuses every pattern that needs backtracking, at its path (pattern and patternProperties, however deep)', () => {
    const problems = schemas.problems({
      type: 'object',
      properties: { 'a/b': { type: 'array', items: { type: 'string', pattern: '^(x+)\\1$' } } },
      patternProperties: { '^(?!tmp~)': { type: 'string' } },
      anyOf: [{ not: { pattern: '(?<=a)b' } }],
      $defs: { ok: { pattern: '^(a|a)*$' } },
    });
    expect(problems.map((p) => p.path).sort()).toEqual(['/anyOf/0/not/pattern', '/patternProperties/^(?!tmp~0)', '/properties/a~1b/items/pattern'].sort());
    const why = (path: string) => problems.find((p) => p.path === path)?.message;
    expect([why('/properties/a~1b/items/pattern'), why('/patternProperties/^(?!tmp~0)'), why('/anyOf/0/not/pattern')]).toEqual([
      expect.stringMatching(/backreference/),
      expect.stringMatching(/lookahead/),
      expect.stringMatching(/lookbehind/),
    ]);
  });

  it('matches an adversarial value against ^(a|a)*$ at once, and reports the mismatch at its path', () => {
    const validate = schemas.compile({ type: 'object', properties: { code: { type: 'string', pattern: '^(a|a)*$' } } });
    const started = performance.now();
    expect(validate({ code: `${'a'.repeat(40)}!` })).toEqual([{ path: '/code', message: 'must match pattern "^(a|a)*$"', keyword: 'pattern' }]);
    expect(performance.now() - started).toBeLessThan(1000);
    expect(validate({ code: 'aaaa' })).toEqual([]);
  });

  it('refuses a value too large to check against its patterns within the budget', () => {
    const validate = schemas.compile({ type: 'string', pattern: '^[a-z]*$' });
    expect(validate('a'.repeat(MATCH_BUDGET))).toEqual([{ path: '', message: expect.stringContaining('too large to check'), keyword: 'pattern' }]);
    expect(validate('a'.repeat(10_000))).toEqual([]);
  });

  it('checks uniqueItems in one pass, objects equal whatever their key order', () => {
    const validate = schemas.compile({ type: 'array', uniqueItems: true });
    expect(validate([{ a: 1, b: [1, { c: 2 }] }, { b: [1, { c: 2 }], a: 1 }])).toEqual([{ path: '', message: 'must NOT have duplicate items (items ## 0 and 1 are identical)', keyword: 'uniqueItems' }]);
    expect(validate([1, '1', [1], { '1': 1 }, null, true])).toEqual([]);
    const many = Array.from({ length: 20_000 }, (_, i) => ({ id: i, tags: ['x', i % 7] }));
    const started = performance.now();
    expect(validate(many)).toEqual([]);
    expect(performance.now() - started).toBeLessThan(5000); // Ajv's own compares every pair: 2 * 10^8 comparisons
  });

  it('compiles two schemas of one $id (an urn: one too) without a clash', () => {
    expect(schemas.compile({ $id: 'urn:x', type: 'string' })('s')).toEqual([]);
    expect(schemas.compile({ $id: 'urn:x', type: 'number' })('s')).toEqual([{ path: '', message: 'must be number', keyword: 'type' }]);
    expect(schemas.compile({ type: 'object', properties: { a: { $id: 'https://example.org/a', type: 'string' } } })({ a: 1 })).toHaveLength(1);
    expect(schemas.compile({ type: 'object', properties: { a: { $id: 'https://example.org/a', type: 'integer' } } })({ a: 1 })).toEqual([]);
  });

  it('builds every author Ajv on the linear-time engine', () => {
    const ajv = createAuthorAjv();
    expect(() => ajv.compile({ type: 'string', pattern: '(a)\\1' })).toThrow(/backreference/);
    expect(ajv.compile({ type: 'string', pattern: '^(a|a)*$' })(`${'a'.repeat(40)}!`)).toBe(false);
  });
});
