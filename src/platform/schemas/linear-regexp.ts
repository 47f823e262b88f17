import type { RE2JS } from 're2js';

/**
 * Patterns written by tenants (the `pattern` and `patternProperties` of the JSON Schemas their packs,
 * questions and goals carry) are matched with RE2JS, a linear-time engine without backtracking: the
 * time a match takes grows with the length of the text, never exponentially, so no answer can hold
 * the event loop the way `^(a|a)*$` does on a backtracking engine. A JSON Schema pattern is an
 * ECMA-262 regular expression with the `u` flag: it is first checked as one, then translated into
 * RE2 syntax with ECMA-262's meanings (`.`, `\s`, `\uXXXX`, named groups, `[^]`). What RE2 cannot
 * express (backreferences, lookahead, lookbehind) is refused, never matched another way.
 */

/** Longest pattern source accepted. */
export const MAX_PATTERN_LENGTH = 4096;
/** Largest compiled program accepted (RE2's approximate measure of a pattern's cost; a UUID pattern is 40). */
export const MAX_PATTERN_PROGRAM = 5000;
/**
 * The matching work one validation may do, in characters matched times the program size of the
 * pattern that matched them: a linear engine still costs text length times pattern size, and this
 * caps one validation at roughly a tenth of a second in the worst case.
 */
export const MATCH_BUDGET = 3_000_000;

/** A pattern the host refuses to match: not ECMA-262, not expressible without backtracking, or too large. */
export class PatternRefused extends Error {
  constructor(
    readonly pattern: string,
    readonly reason: string,
  ) {
    super(`the pattern ${JSON.stringify(pattern.length > 80 ? `${pattern.slice(0, 80)}…` : pattern)} ${reason}`);
    this.name = 'PatternRefused';
  }
}

/** Thrown out of a validation whose pattern matching would exceed MATCH_BUDGET. */
export class MatchBudgetExceeded extends Error {
  constructor() {
    super(`the value is too large to check against the patterns of its schema (more than ${MATCH_BUDGET} characters times pattern size)`);
    this.name = 'MatchBudgetExceeded';
  }
}

// ECMA-262 WhiteSpace and LineTerminator, what `\s` means there (RE2's `\s` is ASCII only and lacks \v).
const WHITESPACE = '\\t\\n\\v\\f\\r \\x{a0}\\x{1680}\\x{2000}-\\x{200a}\\x{2028}\\x{2029}\\x{202f}\\x{205f}\\x{3000}\\x{feff}';
// ECMA-262's `.` without the `s` flag: anything but a line terminator (RE2's excludes only \n).
const DOT = '[^\\n\\r\\x{2028}\\x{2029}]';
const ANY = '\\x{0}-\\x{10FFFF}';
const SYNTAX = '^$\\.*+?()[]{}|/-';
// ECMA-262 General_Category long names RE2 does not know (it takes the short ones).
const CATEGORY: Record<string, string> = {
  Letter: 'L', Cased_Letter: 'LC', Uppercase_Letter: 'Lu', Lowercase_Letter: 'Ll', Titlecase_Letter: 'Lt', Modifier_Letter: 'Lm', Other_Letter: 'Lo',
  Mark: 'M', Nonspacing_Mark: 'Mn', Spacing_Mark: 'Mc', Enclosing_Mark: 'Me', Number: 'N', Decimal_Number: 'Nd', digit: 'Nd', Letter_Number: 'Nl', Other_Number: 'No',
  Punctuation: 'P', punct: 'P', Connector_Punctuation: 'Pc', Dash_Punctuation: 'Pd', Open_Punctuation: 'Ps', Close_Punctuation: 'Pe', Initial_Punctuation: 'Pi',
  Final_Punctuation: 'Pf', Other_Punctuation: 'Po', Symbol: 'S', Math_Symbol: 'Sm', Currency_Symbol: 'Sc', Modifier_Symbol: 'Sk', Other_Symbol: 'So',
  Separator: 'Z', Space_Separator: 'Zs', Line_Separator: 'Zl', Paragraph_Separator: 'Zp', Other: 'C', Control: 'Cc', cntrl: 'Cc', Format: 'Cf',
  Surrogate: 'Cs', Private_Use: 'Co', Unassigned: 'Cn',
};

const hex = (cp: number): string => `\\x{${cp.toString(16)}}`;

const CATEGORIES = new Set(Object.values(CATEGORY));

function property(body: string, negated: boolean, inClass: boolean, pattern: string): string {
  const eq = body.indexOf('=');
  const [key, value] = eq < 0 ? ['', body] : [body.slice(0, eq), body.slice(eq + 1)];
  let name: string | undefined;
  if (key === '' && (value === 'ASCII' || value === 'Any')) name = value;
  else if (key === '' || key === 'General_Category' || key === 'gc') name = CATEGORY[value] ?? (CATEGORIES.has(value) ? value : undefined);
  else if (key === 'Script' || key === 'sc') name = value; // RE2 knows scripts by their long names only
  if (name === 'ASCII') return inClass ? (negated ? '\\x{80}-\\x{10FFFF}' : '\\x{0}-\\x{7f}') : negated ? '[^\\x{0}-\\x{7f}]' : '[\\x{0}-\\x{7f}]';
  if (!name) throw new PatternRefused(pattern, `uses the Unicode property \\p{${body}}, which the linear-time engine does not support`);
  return `\\${negated ? 'P' : 'p'}{${name}}`;
}

/** Where the class opening at `start` closes (the index of its "]"). */
function classEnd(pattern: string, start: number): number {
  for (let i = start + 1; i < pattern.length; i++) {
    if (pattern[i] === '\\') i++;
    else if (pattern[i] === ']') return i;
  }
  return pattern.length;
}

/** True when the class body holds the escape \S (not an escaped backslash followed by "S"). */
function holdsNonSpace(body: string): boolean {
  for (let i = 0; i < body.length; i++) if (body[i] === '\\' && body[++i] === 'S') return true;
  return false;
}

const WHITESPACE_POINTS = [9, 10, 11, 12, 13, 32, 0xa0, 0x1680, ...Array.from({ length: 11 }, (_, k) => 0x2000 + k), 0x2028, 0x2029, 0x202f, 0x205f, 0x3000, 0xfeff];

/**
 * A class holding \S, with ECMA-262's whitespace (RE2's \S inside a class is ASCII-only): [X\S] is
 * "[X] or not whitespace"; [^X\S] is the whitespace [X] does not hold, listed (the class itself is
 * tested on each whitespace character only, one character at a time).
 */
function nonSpaceClass(body: string, negated: boolean): string {
  const rest = body.replace(/\\S|\\[^]/g, (m) => (m === '\\S' ? '' : m));
  if (negated) {
    const inRest = rest ? new RegExp(`^[${rest}]$`, 'u') : undefined;
    const left = WHITESPACE_POINTS.filter((cp) => !inRest?.test(String.fromCodePoint(cp)));
    return left.length ? `[${left.map(hex).join('')}]` : `[^${ANY}]`;
  }
  return rest ? `(?:${toRe2Syntax(`[${rest}]`)}|[^${WHITESPACE}])` : `[^${WHITESPACE}]`;
}

/**
 * The RE2 form of an ECMA-262 (`u` flag) pattern with the same meaning; throws PatternRefused for a
 * pattern that is not ECMA-262 or needs backtracking.
 */
export function toRe2Syntax(pattern: string): string {
  try {
    new RegExp(pattern, 'u'); // only compiled, never matched: checks it is an ECMA-262 pattern
  } catch {
    throw new PatternRefused(pattern, 'is not an ECMA-262 regular expression');
  }
  let out = '';
  let inClass = false;
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === '\\') {
      const e = pattern[++i];
      if (e >= '1' && e <= '9') throw new PatternRefused(pattern, 'uses a backreference, which cannot be matched without backtracking');
      if (e === 'k') throw new PatternRefused(pattern, 'uses a named backreference, which cannot be matched without backtracking');
      if (e === 's') out += inClass ? WHITESPACE : `[${WHITESPACE}]`;
      else if (e === 'S') out += `[^${WHITESPACE}]`; // in a class: see nonSpaceClass
      else if (e === 'b') out += inClass ? hex(8) : '\\b';
      else if ('dDwWBfnrtv'.includes(e)) out += `\\${e}`;
      else if (e === '0') out += hex(0);
      else if (e === 'c') out += hex(pattern.charCodeAt(++i) % 32);
      else if (e === 'x') {
        out += hex(parseInt(pattern.slice(i + 1, i + 3), 16));
        i += 2;
      } else if (e === 'u') {
        let cp: number;
        if (pattern[i + 1] === '{') {
          const end = pattern.indexOf('}', i);
          cp = parseInt(pattern.slice(i + 2, end), 16);
          i = end;
        } else {
          cp = parseInt(pattern.slice(i + 1, i + 5), 16);
          i += 4;
          const low = pattern.startsWith('\\u', i + 1) ? parseInt(pattern.slice(i + 3, i + 7), 16) : NaN;
          if (cp >= 0xd800 && cp <= 0xdbff && low >= 0xdc00 && low <= 0xdfff) {
            cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
            i += 6;
          }
        }
        out += hex(cp);
      } else if (e === 'p' || e === 'P') {
        const end = pattern.indexOf('}', i);
        out += property(pattern.slice(i + 2, end), e === 'P', inClass, pattern);
        i = end;
      } else if (SYNTAX.includes(e)) out += `\\${e}`;
      else throw new PatternRefused(pattern, `uses the escape \\${e}, which the linear-time engine does not support`);
    } else if (inClass) {
      if (c === ']') inClass = false;
      out += c === '[' ? '\\[' : c; // RE2 would read "[:" as a POSIX class
    } else if (c === '[') {
      if (pattern.startsWith('[^]', i)) {
        out += `[${ANY}]`;
        i += 2;
      } else if (pattern.startsWith('[]', i)) {
        out += `[^${ANY}]`; // the empty class never matches
        i += 1;
      } else {
        const negated = pattern[i + 1] === '^';
        const end = classEnd(pattern, negated ? i + 1 : i);
        const body = pattern.slice(negated ? i + 2 : i + 1, end);
        if (holdsNonSpace(body)) {
          out += nonSpaceClass(body, negated);
          i = end;
          continue;
        }
        inClass = true;
        out += c;
        if (negated) out += pattern[++i];
      }
    } else if (c === '(' && pattern[i + 1] === '?') {
      const head = pattern.slice(i, i + 4);
      if (head.startsWith('(?=') || head.startsWith('(?!')) throw new PatternRefused(pattern, 'uses a lookahead, which cannot be matched without backtracking');
      if (head === '(?<=' || head === '(?<!') throw new PatternRefused(pattern, 'uses a lookbehind, which cannot be matched without backtracking');
      if (head.startsWith('(?<')) {
        out += '(?P<';
        i += 2;
      } else if (head.startsWith('(?:')) {
        out += '(?:';
        i += 2;
      } else throw new PatternRefused(pattern, 'uses a group modifier, which the linear-time engine does not support');
    } else out += c === '.' ? DOT : c;
  }
  return out;
}

interface Budget {
  remaining: number;
}
/** The budget of the validation in progress (validation is synchronous, so one at a time); unlimited outside one. */
let current: Budget | undefined;

/** Runs `fn` (a validation) with MATCH_BUDGET of matching work; throws MatchBudgetExceeded when it would do more. */
export function withMatchBudget<T>(fn: () => T, budget = MATCH_BUDGET): T {
  const outer = current;
  current = { remaining: budget };
  try {
    return fn();
  } finally {
    current = outer;
  }
}

/** A compiled author pattern: what Ajv needs of a RegExp (`test`), matched by RE2JS within the budget. */
export class LinearRegExp {
  private readonly re: RE2JS;
  private readonly cost: number;

  constructor(
    readonly source: string,
    readonly flags = 'u',
  ) {
    if (source.length > MAX_PATTERN_LENGTH) throw new PatternRefused(source, `is longer than ${MAX_PATTERN_LENGTH} characters`);
    if (flags !== 'u' && flags !== '') throw new PatternRefused(source, `has flags "${flags}" (JSON Schema patterns take none)`);
    const syntax = toRe2Syntax(source);
    try {
      // Loaded with the first author pattern (264 KB of JavaScript no boot needs).
      this.re = (require('re2js') as typeof import('re2js')).RE2JS.compile(syntax);
    } catch (e) {
      throw new PatternRefused(source, `cannot be compiled by the linear-time engine: ${(e as Error).message}`);
    }
    this.cost = this.re.programSize();
    if (this.cost > MAX_PATTERN_PROGRAM) throw new PatternRefused(source, `is too complex (program size ${this.cost}, at most ${MAX_PATTERN_PROGRAM})`);
  }

  test(s: string): boolean {
    if (current) {
      current.remaining -= (s.length + 1) * this.cost;
      if (current.remaining < 0) throw new MatchBudgetExceeded();
    }
    return this.re.test(s);
  }

  /** Ajv keys its compiled patterns by this text: it must differ between patterns. */
  toString(): string {
    return `/${this.source}/${this.flags}`;
  }
}

/**
 * Ajv's `code.regExp` engine for author schemas: `(pattern, flags) => {test}`, with the `code` Ajv
 * writes into standalone validation code to get the same engine.
 */
export const linearRegExp = Object.assign((pattern: string, flags: string): LinearRegExp => new LinearRegExp(pattern, flags), {
  code: 'require("openwop-host/dist/src/platform/schemas/linear-regexp").linearRegExp',
});

/** Why `pattern` is refused (undefined: it is matched without backtracking). */
export function patternProblem(pattern: string): string | undefined {
  try {
    new LinearRegExp(pattern);
    return undefined;
  } catch (e) {
    if (e instanceof PatternRefused) return e.message;
    throw e;
  }
}
