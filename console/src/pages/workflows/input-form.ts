/**
 * A start form from the JSON Schema a workflow declares for its inputs (its `parameters`): one field per
 * top-level property (text, number, yes/no, a choice for an `enum`, JSON for objects and arrays), what is
 * typed turned back into the inputs, and the host's 400 `validation_error` problems (`/inputs/<name>...`)
 * put on the fields they name. The host stays the one validator: the form checks nothing itself but
 * whether a number or a JSON field parses.
 */
export type FieldKind = 'text' | 'number' | 'integer' | 'boolean' | 'choice' | 'json';

export interface InputField {
  name: string;
  kind: FieldKind;
  label: string;
  required: boolean;
  description?: string;
  /** The choices of an `enum` (as text). */
  choices?: string[];
  /** A value to show as the placeholder (`examples[0]`, else `default`). */
  example?: string;
  /** The initial text of the field (`default`), '' when none. */
  initial: string;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function text(v: unknown): string {
  return typeof v === 'string' ? v : JSON.stringify(v);
}

function kindOf(s: Record<string, unknown>): FieldKind {
  if (Array.isArray(s.enum) && s.enum.every((v) => typeof v === 'string')) return 'choice';
  const type = Array.isArray(s.type) ? s.type.find((t) => t !== 'null') : s.type;
  if (type === 'string') return 'text';
  if (type === 'number') return 'number';
  if (type === 'integer') return 'integer';
  if (type === 'boolean') return 'boolean';
  return 'json';
}

/** The fields of a parameters schema; none for a workflow that declares no object of properties. */
export function inputFields(parameters: Record<string, unknown> | null | undefined): InputField[] {
  if (!isObject(parameters) || !isObject(parameters.properties)) return [];
  const required = new Set(Array.isArray(parameters.required) ? parameters.required.filter((r): r is string => typeof r === 'string') : []);
  return Object.entries(parameters.properties).map(([name, raw]) => {
    const s = isObject(raw) ? raw : {};
    const kind = kindOf(s);
    const example = Array.isArray(s.examples) && s.examples.length ? text(s.examples[0]) : s.default !== undefined ? text(s.default) : undefined;
    return {
      name,
      kind,
      label: typeof s.title === 'string' && s.title ? s.title : name,
      required: required.has(name),
      ...(typeof s.description === 'string' && s.description ? { description: s.description } : {}),
      ...(kind === 'choice' ? { choices: (s.enum as string[]).slice() } : {}),
      ...(example !== undefined ? { example } : {}),
      initial: s.default !== undefined ? (kind === 'boolean' ? String(s.default === true) : text(s.default)) : kind === 'boolean' ? 'false' : '',
    };
  });
}

/**
 * The inputs the form's values make: an empty field is left out (the host then says if it was required),
 * a number or JSON field that does not parse is a problem of that field.
 */
export function inputsOf(fields: InputField[], values: Record<string, string>): { inputs: Record<string, unknown>; problems: Record<string, string> } {
  const inputs: Record<string, unknown> = {};
  const problems: Record<string, string> = {};
  for (const f of fields) {
    const v = values[f.name] ?? f.initial;
    if (f.kind === 'boolean') {
      inputs[f.name] = v === 'true';
      continue;
    }
    if (v.trim() === '') continue;
    if (f.kind === 'text' || f.kind === 'choice') inputs[f.name] = v;
    else if (f.kind === 'number' || f.kind === 'integer') {
      const n = Number(v);
      if (Number.isNaN(n)) problems[f.name] = 'must be a number';
      else inputs[f.name] = n;
    } else {
      try {
        inputs[f.name] = JSON.parse(v);
      } catch {
        problems[f.name] = 'must be JSON';
      }
    }
  }
  return { inputs, problems };
}

/**
 * The host's problems by field: `/inputs/<name>/...` goes to its field; what names no field (`/inputs`
 * itself, a property the form does not show) under the empty key, for the form as a whole.
 */
export function problemsByField(fields: InputField[], details: unknown): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  const problems = isObject(details) && Array.isArray(details.problems) ? details.problems : [];
  const names = new Set(fields.map((f) => f.name));
  for (const p of problems) {
    if (!isObject(p) || typeof p.message !== 'string') continue;
    const path = typeof p.path === 'string' ? p.path : '';
    const m = /^\/inputs\/([^/]+)(\/.*)?$/.exec(path);
    const name = m ? m[1].replace(/~1/g, '/').replace(/~0/g, '~') : '';
    const key = names.has(name) ? name : '';
    const message = key ? `${m![2] ? `${m![2].slice(1)}: ` : ''}${p.message}` : `${path || '/inputs'}: ${p.message}`;
    (out[key] ??= []).push(message);
  }
  return out;
}
