import { LinearRegExp, linearRegExp, MATCH_BUDGET, MatchBudgetExceeded, MAX_PATTERN_LENGTH, patternProblem, PatternRefused, toRe2Syntax, withMatchBudget } from './linear-regexp';

describe('LinearRegExp (author patterns without backtracking)', () => {
  it('matches ^(a|a)*$ against 40 characters and a miss at once (a backtracking engine takes 2^40 steps)', () => {
    const re = new LinearRegExp('^(a|a)*$');
    const started = performance.now();
    expect(re.test(`${'a'.repeat(40)}!`)).toBe(false);
    expect(performance.now() - started).toBeLessThan(1000);
    // Linear in the text: 100 000 characters are matched, not 2^100000 paths.
    expect(re.test(`${'a'.repeat(100_000)}!`)).toBe(false);
    expect(performance.now() - started).toBeLessThan(5000);
    expect(re.test('aaaa')).toBe(true);
  });

  // Each pattern is checked against V8's ECMA-262 engine (u flag) on every string: the same answers.
  const PATTERNS = [
    '^a.c$', '\\s', '^\\S+$', '[\\s]', '[^\\s]', '[^\\S\\r\\n]', '[a\\S]', '[^a\\S]', '[\\S\\s]', '\\u0041', '\\u{1F600}', '\\uD83D\\uDE00',
    '^(?<y>\\d{4})-(?<m>\\d{2})$', '[^]', '^[]$', '\\cJ', '\\0', '\\x41', '\\bfoo\\b', '[\\b]', '\\p{Lu}+', '\\p{Letter}', '\\p{gc=Lu}', '\\P{L}',
    '\\p{Script=Greek}', '[\\p{L}\\d]', '\\p{ASCII}', '[^\\p{ASCII}]', '\\p{Any}', '\\/', '[\\-a]', '^\\d+\\.\\d+$', 'a{2,3}?', '(?:ab)+', '\\.', '^$',
    'x*', '\\{', '^[\\^a]$', '^[^\\]]$', '[[]', '^[a-z0-9._%+-]+@[a-z0-9.-]+\\.[a-z]{2,}$',
  ];
  const STRINGS = ['abc', 'a\nc', 'a\rc', 'a\u2028c', ' ', '\u000b', '\u00a0', '\ufeff', 'A', '😀', '2024-05', '', '\n', '\u0000', 'foo bar', '\b', 'Ωmega', 'é', '12.5', 'aaa', 'abab', '\t \t', '.', 'x', '[', ']', '{', '^', '-', '/', 'Ελ', 'me@example.org'];
  it.each(PATTERNS)('matches %s as ECMA-262 does', (p) => {
    const ours = new LinearRegExp(p);
    const ecma = new RegExp(p, 'u');
    expect(STRINGS.map((s) => [s, ours.test(s)])).toEqual(STRINGS.map((s) => [s, ecma.test(s)]));
  });

  it.each([
    ['(a)\\1', /backreference/],
    ['(?<n>a)\\k<n>', /named backreference/],
    ['(?=a)b', /lookahead/],
    ['^(?!-)[a-z]+$', /lookahead/],
    ['(?<=a)b', /lookbehind/],
    ['(?<!a)b', /lookbehind/],
    ['[', /not an ECMA-262 regular expression/],
    ['(?i)a', /not an ECMA-262 regular expression/],
    ['\\z', /not an ECMA-262 regular expression/],
    ['a{1001}', /cannot be compiled by the linear-time engine/],
    ['\\p{Emoji}', /Unicode property/],
    ['\\p{Script_Extensions=Latin}', /Unicode property/],
    ['a'.repeat(MAX_PATTERN_LENGTH + 1), /longer than/],
  ])('refuses %s', (p, why) => {
    expect(() => new LinearRegExp(p)).toThrow(PatternRefused);
    expect(patternProblem(p)).toMatch(why);
  });

  it('translates to RE2 syntax with ECMA-262 meanings', () => {
    expect(toRe2Syntax('(?<word>a.)')).toBe('(?P<word>a[^\\n\\r\\x{2028}\\x{2029}])');
    expect(toRe2Syntax('\\uD83D\\uDE00')).toBe('\\x{1f600}');
    expect(toRe2Syntax('[[:a]')).toBe('[\\[:a]'); // no POSIX class in ECMA-262
  });

  it('is the engine Ajv takes: (pattern, flags) => {test}, keyed by its text, with the code of standalone validation', () => {
    const a = linearRegExp('^a$', 'u');
    expect(a.test('a')).toBe(true);
    expect(String(a)).toBe('/^a$/u');
    expect(String(linearRegExp('^b$', 'u'))).not.toBe(String(a));
    expect(typeof linearRegExp.code).toBe('string');
    expect(() => linearRegExp('a', 'g')).toThrow(PatternRefused);
  });

  it('holds one validation to the matching budget, and only inside a validation', () => {
    const re = new LinearRegExp('^[a-z]*$');
    const huge = 'a'.repeat(MATCH_BUDGET);
    expect(re.test(huge)).toBe(true); // no budget outside a validation
    expect(() => withMatchBudget(() => re.test(huge))).toThrow(MatchBudgetExceeded);
    // The budget is shared by every match of one validation.
    let matched = 0;
    expect(() =>
      withMatchBudget(() => {
        for (;;) {
          re.test('a'.repeat(10_000));
          matched++;
        }
      }),
    ).toThrow(MatchBudgetExceeded);
    expect(matched).toBeGreaterThan(10);
    expect(withMatchBudget(() => re.test('abc'))).toBe(true);
  });
});
