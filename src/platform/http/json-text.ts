/**
 * Exact JSON text: finding the submitted text of one member of a JSON object (so an artifact can be
 * stored byte-for-byte as the client sent it, not as a re-serialization of the parsed value), and
 * serializing a response that embeds such stored text verbatim.
 */

const WS = new Set([0x20, 0x09, 0x0a, 0x0d]);

function skipWs(text: string, i: number): number {
  while (i < text.length && WS.has(text.charCodeAt(i))) i++;
  return i;
}

/** The index just past the JSON string starting at `i` (which must be `"`). */
function skipString(text: string, i: number): number {
  for (let j = i + 1; j < text.length; j++) {
    const c = text.charCodeAt(j);
    if (c === 0x5c) j++; // backslash: skip the escaped character
    else if (c === 0x22) return j + 1;
  }
  throw new SyntaxError('unterminated string');
}

/** The index just past the JSON value starting at `i` (no whitespace before it). */
function skipValue(text: string, i: number): number {
  const c = text[i];
  if (c === '"') return skipString(text, i);
  if (c === '{' || c === '[') {
    let depth = 0;
    for (let j = i; j < text.length; j++) {
      const d = text[j];
      if (d === '"') j = skipString(text, j) - 1;
      else if (d === '{' || d === '[') depth++;
      else if (d === '}' || d === ']') {
        depth--;
        if (depth === 0) return j + 1;
      }
    }
    throw new SyntaxError('unterminated container');
  }
  // number, true, false, null: up to the next delimiter
  let j = i;
  while (j < text.length && !WS.has(text.charCodeAt(j)) && text[j] !== ',' && text[j] !== '}' && text[j] !== ']') j++;
  if (j === i) throw new SyntaxError(`unexpected character at ${i}`);
  return j;
}

/**
 * The exact source text of the member `key` of the top-level JSON object in `text` (the last one
 * when the key repeats, as `JSON.parse` keeps the last), or undefined when there is none. `text`
 * must be valid JSON (it is the body the parser already accepted); keys are compared decoded, so
 * an escaped key (`"\u0061rtifact"`) matches too.
 */
export function jsonMemberText(text: string, key: string): string | undefined {
  let i = skipWs(text, text.charCodeAt(0) === 0xfeff ? 1 : 0);
  if (text[i] !== '{') return undefined;
  i = skipWs(text, i + 1);
  let found: string | undefined;
  if (text[i] === '}') return undefined;
  for (;;) {
    if (text[i] !== '"') throw new SyntaxError(`expected a key at ${i}`);
    const keyEnd = skipString(text, i);
    const raw = text.slice(i, keyEnd);
    const name = raw.includes('\\') ? (JSON.parse(raw) as string) : raw.slice(1, -1);
    i = skipWs(text, keyEnd);
    if (text[i] !== ':') throw new SyntaxError(`expected ":" at ${i}`);
    i = skipWs(text, i + 1);
    const end = skipValue(text, i);
    if (name === key) found = text.slice(i, end);
    i = skipWs(text, end);
    if (text[i] === ',') i = skipWs(text, i + 1);
    else if (text[i] === '}') return found;
    else throw new SyntaxError(`expected "," or "}" at ${i}`);
  }
}

/** The member's exact text when the body has it, else the value re-serialized (a caller without raw text). */
export function submittedText(rawBody: string | undefined, key: string | undefined, value: unknown): string {
  if (rawBody !== undefined) {
    const text = key === undefined ? rawBody.replace(/^\uFEFF/, '').trim() : jsonMemberText(rawBody, key);
    if (text !== undefined) return text;
  }
  return JSON.stringify(value);
}

const VERBATIM = new WeakMap<object, string>();

/** Marks `value` so `stringifyVerbatim` emits `text` (its stored source) in its place. Returns `value`. */
export function withVerbatimText<T extends object>(value: T, text: string): T {
  VERBATIM.set(value, text);
  return value;
}

/**
 * `JSON.stringify(value)`, except that every object marked with `withVerbatimText` is emitted as
 * its stored text, byte for byte. Marked objects are swapped for unique placeholder strings that
 * JSON text can hold nowhere else (a NUL character plus a random nonce), then spliced.
 */
export function stringifyVerbatim(value: unknown): string {
  const texts: string[] = [];
  const nonce = `\u0000verbatim:${Math.random().toString(36).slice(2)}${Date.now().toString(36)}:`;
  const json = JSON.stringify(value, function (this: unknown, _key: string, v: unknown) {
    if (v && typeof v === 'object') {
      const text = VERBATIM.get(v);
      if (text !== undefined) {
        texts.push(text);
        return `${nonce}${texts.length - 1}`;
      }
    }
    return v;
  });
  if (!texts.length) return json;
  const quotedNonce = JSON.stringify(nonce).slice(0, -1); // `"\u0000verbatim:<nonce>:` without the closing quote
  let out = '';
  let from = 0;
  for (;;) {
    const at = json.indexOf(quotedNonce, from);
    if (at < 0) break;
    const close = json.indexOf('"', at + quotedNonce.length);
    out += json.slice(from, at) + texts[Number(json.slice(at + quotedNonce.length, close))];
    from = close + 1;
  }
  return out + json.slice(from);
}
