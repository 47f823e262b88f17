import { canonicalJson } from '../artifacts/artifact-registry.service';
import { DomainError } from '../errors/domain-error';
import { assertJsonWithinLimits, assertRequestParamsWithinLimits, jsonTextDepthExceeds } from './json-guard';

const limits = { maxDepth: 4, maxKeys: 3, maxItems: 3, maxStringLength: 5 };

function refusal(fn: () => void): { status: number; code: string; path?: unknown } | undefined {
  try {
    fn();
    return undefined;
  } catch (e) {
    if (!(e instanceof DomainError)) throw e;
    return { status: e.status, code: e.code, path: e.details?.path };
  }
}

describe('JSON guard', () => {
  it('measures nesting from the text, ignoring brackets inside strings and escaped quotes', () => {
    expect(jsonTextDepthExceeds('[[[[1]]]]', 4)).toBe(false);
    expect(jsonTextDepthExceeds('[[[[[1]]]]]', 4)).toBe(true);
    expect(jsonTextDepthExceeds('{"a":"[[[[[[[\\"[[[[["}', 4)).toBe(false);
    expect(jsonTextDepthExceeds(`${'{"a":'.repeat(100_000)}1${'}'.repeat(100_000)}`, 64)).toBe(true);
  });

  it('accepts values within every limit', () => {
    expect(refusal(() => assertJsonWithinLimits({ a: [1, 'abcde', { b: null }], c: true }, limits))).toBeUndefined();
  });

  it.each([
    ['too deep', [[[[[1]]]]], 400],
    ['too many keys', { a: 1, b: 2, c: 3, d: 4 }, 413],
    ['too many items', { a: [1, 2, 3, 4] }, 413],
    ['too long a string', { a: ['abcdef'] }, 413],
    ['too long a key', { abcdef: 1 }, 413],
    ['NUL in a string', { a: 'a\u0000' }, 400],
    ['NUL in a key', { 'a\u0000': 1 }, 400],
    ['a lone high surrogate', { a: 'x\uD800' }, 400],
    ['a lone low surrogate', ['\uDC00x'], 400],
  ])('refuses %s', (_name, value, status) => {
    expect(refusal(() => assertJsonWithinLimits(value, limits))).toEqual(expect.objectContaining({ status, code: status === 413 ? 'payload_too_large' : 'validation_error' }));
  });

  it('accepts a surrogate pair (an astral character)', () => {
    expect(refusal(() => assertJsonWithinLimits({ a: '\u{1F600}' }, limits))).toBeUndefined();
  });

  it('names where the offending value is, as a JSON Pointer', () => {
    expect(refusal(() => assertJsonWithinLimits({ a: [{ 'x/y': 'a\u0000' }] }, limits))?.path).toBe('/a/0/x~1y');
  });

  it('walks a structure far deeper than the call stack without recursion', () => {
    let deep: unknown = 1;
    for (let i = 0; i < 200_000; i++) deep = [deep];
    expect(refusal(() => assertJsonWithinLimits(deep, { ...limits, maxDepth: 1_000_000 }))).toBeUndefined();
    expect(refusal(() => assertJsonWithinLimits(deep, limits))?.status).toBe(400);
  });

  it('checks query and path parameters', () => {
    expect(refusal(() => assertRequestParamsWithinLimits({ query: { a: 'ok' }, params: { id: 'ok' } }, limits))).toBeUndefined();
    expect(refusal(() => assertRequestParamsWithinLimits({ query: { a: 'a\u0000' }, params: {} }, limits))?.status).toBe(400);
    expect(refusal(() => assertRequestParamsWithinLimits({ query: { a: ['1', '2', '3', '4'] }, params: {} }, limits))?.status).toBe(413);
    expect(refusal(() => assertRequestParamsWithinLimits({ query: {}, params: { id: 'abcdefgh' } }, limits))?.status).toBe(413);
  });

  it('names, in the details of a 413, the limit that refused and its value (no discovery key advertises them)', () => {
    const details = (fn: () => void): unknown => {
      try {
        fn();
      } catch (e) {
        if (e instanceof DomainError) return { message: e.message, details: e.details };
        throw e;
      }
      return undefined;
    };
    expect(details(() => assertJsonWithinLimits({ a: ['abcdef'] }, limits))).toEqual({
      message: 'A string in the JSON body is longer than 5 characters.',
      details: { path: '/a/0', limit: 'maxStringLength', maximum: 5 },
    });
    expect(details(() => assertJsonWithinLimits({ abcdef: 1 }, limits))).toEqual(expect.objectContaining({ details: { path: '/', limit: 'maxStringLength', maximum: 5 } }));
    expect(details(() => assertJsonWithinLimits({ a: 1, b: 2, c: 3, d: 4 }, limits))).toEqual(expect.objectContaining({ details: { path: '/', limit: 'maxKeys', maximum: 3 } }));
    expect(details(() => assertJsonWithinLimits({ a: [1, 2, 3, 4] }, limits))).toEqual(expect.objectContaining({ details: { path: '/a', limit: 'maxItems', maximum: 3 } }));
    expect(details(() => assertRequestParamsWithinLimits({ query: {}, params: { id: 'abcdefgh' } }, limits))).toEqual({
      message: 'The path parameter "id" is longer than 5 characters.',
      details: { path: 'path.id', limit: 'maxStringLength', maximum: 5 },
    });
    expect(details(() => assertRequestParamsWithinLimits({ query: { a: ['1', '2', '3', '4'] }, params: {} }, limits))).toEqual(expect.objectContaining({ details: { path: 'query.a', limit: 'maxItems', maximum: 3 } }));
    // A 400 names no size limit.
    expect(details(() => assertJsonWithinLimits({ a: 'a\u0000' }, limits))).toEqual(expect.objectContaining({ details: { path: '/a' } }));
  });

  it('canonicalization refuses a too-deep document as input instead of overflowing the stack', () => {
    let deep: unknown = 1;
    for (let i = 0; i < 200_000; i++) deep = { a: deep };
    expect(refusal(() => canonicalJson(deep))).toEqual(expect.objectContaining({ status: 400, code: 'validation_error' }));
    expect(canonicalJson({ b: 1, a: [true, null] })).toBe('{"a":[true,null],"b":1}');
  });
});
