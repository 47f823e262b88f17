/**
 * A renderer for the subset of Helm's template language (Go text/template plus a few Sprig functions)
 * that deploy/helm/openwop-host keeps to, so the tests can render the chart without the helm binary.
 *
 * Supported: text and actions with `{{-`/`-}}` trimming, comments, `define`, `include`, `if`/`else if`/
 * `else`/`end`, `range` (over lists and maps, maps in key order as Go does, with `$k, $v :=`), `$x :=`,
 * fields (`.Values.a.b`, `$.Values`, `$v.a`), parenthesised pipelines, string/number/bool literals, and
 * the functions default, quote, toYaml, nindent, indent, trunc, trimSuffix, printf (%s %d %v), contains,
 * required, b64enc, eq, ne, not, and, or. Anything else (`with`, `template`, `tpl`, `lookup`, an
 * unknown function) throws, so a template that leaves the subset fails its test instead of being
 * rendered wrongly. Values behave as in Helm: a missing value is empty, maps merge, numbers print as
 * Go prints float64 (a number of 1e6 or more throws: Helm would print it as 1e+06).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as YAML from 'yaml';

type Value = unknown;
type Fn = (...args: Value[]) => Value;

interface Tok {
  k: 'str' | 'num' | 'bool' | 'nil' | 'field' | 'var' | 'ident' | 'pipe' | 'lp' | 'rp' | 'decl' | 'comma';
  v: string;
}

type Operand =
  | { t: 'lit'; v: Value }
  | { t: 'field'; base: 'dot' | string; path: string[] }
  | { t: 'fn'; name: string }
  | { t: 'sub'; pipe: Pipe };
type Cmd = Operand[];
interface Pipe {
  decl?: string[];
  cmds: Cmd[];
}
type Node =
  | { t: 'text'; v: string }
  | { t: 'out'; pipe: Pipe }
  | { t: 'if'; branches: Array<{ cond: Pipe; body: Node[] }>; otherwise?: Node[] }
  | { t: 'range'; pipe: Pipe; body: Node[]; otherwise?: Node[] };

function lex(src: string): Tok[] {
  const out: Tok[] = [];
  let i = 0;
  const ident = /[A-Za-z_][A-Za-z0-9_]*/y;
  while (i < src.length) {
    const c = src[i];
    if (/\s/.test(c)) i++;
    else if (c === '"') {
      let j = i + 1;
      while (j < src.length && src[j] !== '"') j += src[j] === '\\' ? 2 : 1;
      out.push({ k: 'str', v: JSON.parse(src.slice(i, j + 1)) as string });
      i = j + 1;
    } else if (c === '`') {
      const j = src.indexOf('`', i + 1);
      out.push({ k: 'str', v: src.slice(i + 1, j) });
      i = j + 1;
    } else if (/[0-9-]/.test(c)) {
      const m = /-?\d+(\.\d+)?/y;
      m.lastIndex = i;
      const r = m.exec(src);
      if (!r) throw new Error(`template: unexpected "${c}" in {{${src}}}`);
      out.push({ k: 'num', v: r[0] });
      i += r[0].length;
    } else if (c === '.' || c === '$') {
      const m = /(\$[A-Za-z0-9_]*)?((\.[A-Za-z_][A-Za-z0-9_]*)*)(\.?)/y;
      m.lastIndex = i;
      const r = m.exec(src)!;
      out.push({ k: r[1] !== undefined ? 'var' : 'field', v: r[0] });
      i += r[0].length;
    } else if (c === '|') (out.push({ k: 'pipe', v: c }), i++);
    else if (c === '(') (out.push({ k: 'lp', v: c }), i++);
    else if (c === ')') (out.push({ k: 'rp', v: c }), i++);
    else if (c === ',') (out.push({ k: 'comma', v: c }), i++);
    else if (src.startsWith(':=', i)) (out.push({ k: 'decl', v: ':=' }), (i += 2));
    else {
      ident.lastIndex = i;
      const r = ident.exec(src);
      if (!r) throw new Error(`template: unexpected "${c}" in {{${src}}}`);
      const w = r[0];
      out.push(w === 'true' || w === 'false' ? { k: 'bool', v: w } : w === 'nil' ? { k: 'nil', v: w } : { k: 'ident', v: w });
      i += w.length;
    }
  }
  return out;
}

function parsePipe(toks: Tok[], pos = { i: 0 }, inParens = false): Pipe {
  const pipe: Pipe = { cmds: [] };
  // `$a := ...` or `$k, $v := ...`
  const declAt = toks.findIndex((t, n) => n >= pos.i && t.k === 'decl');
  if (declAt >= 0 && !inParens && toks.slice(pos.i, declAt).every((t) => t.k === 'var' || t.k === 'comma')) {
    pipe.decl = toks.slice(pos.i, declAt).filter((t) => t.k === 'var').map((t) => t.v);
    pos.i = declAt + 1;
  }
  let cmd: Cmd = [];
  while (pos.i < toks.length) {
    const t = toks[pos.i++];
    if (t.k === 'rp') {
      if (!inParens) throw new Error('template: unmatched ")"');
      break;
    }
    if (t.k === 'pipe') {
      pipe.cmds.push(cmd);
      cmd = [];
      continue;
    }
    if (t.k === 'lp') cmd.push({ t: 'sub', pipe: parsePipe(toks, pos, true) });
    else if (t.k === 'str') cmd.push({ t: 'lit', v: t.v });
    else if (t.k === 'num') cmd.push({ t: 'lit', v: Number(t.v) });
    else if (t.k === 'bool') cmd.push({ t: 'lit', v: t.v === 'true' });
    else if (t.k === 'nil') cmd.push({ t: 'lit', v: null });
    else if (t.k === 'ident') cmd.push({ t: 'fn', name: t.v });
    else if (t.k === 'field' || t.k === 'var') {
      const [head, ...rest] = t.v.split('.');
      cmd.push({ t: 'field', base: t.k === 'field' ? 'dot' : head, path: rest.filter(Boolean) });
    } else throw new Error(`template: unexpected "${t.v}"`);
  }
  if (cmd.length) pipe.cmds.push(cmd);
  if (!pipe.cmds.length) throw new Error('template: empty pipeline');
  return pipe;
}

/** Splits a template into text and actions, applying the trim markers, and builds the tree. */
function parse(src: string, file: string, defines: Map<string, Node[]>): Node[] {
  const parts: Array<{ text: string } | { action: string }> = [];
  let i = 0;
  while (i < src.length) {
    const open = src.indexOf('{{', i);
    if (open < 0) {
      parts.push({ text: src.slice(i) });
      break;
    }
    let text = src.slice(i, open);
    let start = open + 2;
    if (src.startsWith('- ', start) || src.startsWith('-\n', start)) {
      text = text.replace(/\s+$/, '');
      start += 1;
    }
    parts.push({ text });
    let close = src.indexOf('}}', start);
    if (src.slice(start).trimStart().startsWith('/*')) close = src.indexOf('*/', start) + 2 + src.slice(src.indexOf('*/', start) + 2).indexOf('}}');
    if (close < start) throw new Error(`${file}: unclosed action`);
    let body = src.slice(start, close);
    i = close + 2;
    if (/\s-$/.test(body)) {
      body = body.slice(0, -1);
      const m = /^\s*/.exec(src.slice(i))!;
      i += m[0].length;
    }
    body = body.trim();
    if (!body.startsWith('/*')) parts.push({ action: body });
  }
  let n = 0;
  const block = (stopAt: string[]): { nodes: Node[]; stop?: string } => {
    const nodes: Node[] = [];
    while (n < parts.length) {
      const p = parts[n++];
      if ('text' in p) {
        if (p.text) nodes.push({ t: 'text', v: p.text });
        continue;
      }
      const a = p.action;
      const word = /^[a-z]+/.exec(a)?.[0] ?? '';
      if (word === 'end' || word === 'else') {
        if (!stopAt.includes(word)) throw new Error(`${file}: unexpected {{${a}}}`);
        return { nodes, stop: a };
      }
      if (word === 'if') {
        const node: Extract<Node, { t: 'if' }> = { t: 'if', branches: [] };
        let cond = a.slice(2);
        for (;;) {
          const b = block(['end', 'else']);
          node.branches.push({ cond: parsePipe(lex(cond)), body: b.nodes });
          if (b.stop === 'end') break;
          if (/^else\s+if\s/.test(b.stop!)) cond = b.stop!.replace(/^else\s+if/, '');
          else {
            node.otherwise = block(['end']).nodes;
            break;
          }
        }
        nodes.push(node);
      } else if (word === 'range') {
        const b = block(['end', 'else']);
        const node: Node = { t: 'range', pipe: parsePipe(lex(a.slice(5))), body: b.nodes };
        if (b.stop !== 'end') node.otherwise = block(['end']).nodes;
        nodes.push(node);
      } else if (word === 'define') {
        const name = JSON.parse(a.slice(6).trim()) as string;
        defines.set(name, block(['end']).nodes);
      } else if (['with', 'template', 'block', 'break', 'continue'].includes(word)) {
        throw new Error(`${file}: {{${word}}} is outside the chart's template subset`);
      } else nodes.push({ t: 'out', pipe: parsePipe(lex(a)) });
    }
    if (stopAt.length) throw new Error(`${file}: missing {{end}}`);
    return { nodes };
  };
  return block([]).nodes;
}

const isMap = (v: Value): v is Record<string, Value> => typeof v === 'object' && v !== null && !Array.isArray(v);
const empty = (v: Value) => v === undefined || v === null || v === false || v === 0 || v === '' || (Array.isArray(v) && !v.length) || (isMap(v) && !Object.keys(v).length);

/** Go's fmt of a value in template output (Helm turns a missing value into ""). */
function show(v: Value): string {
  if (v === undefined || v === null) return '';
  if (typeof v === 'number') {
    if (Math.abs(v) >= 1e6) throw new Error(`template: Helm prints ${v} as a float (1e+06 style); quote it or keep it below 1e6`);
    return String(v);
  }
  if (typeof v === 'string' || typeof v === 'boolean') return String(v);
  throw new Error(`template: printing a ${Array.isArray(v) ? 'list' : 'map'} directly; use toYaml`);
}

function printf(format: string, ...args: Value[]): string {
  let n = 0;
  return format.replace(/%([sdv%])/g, (_m, verb: string) => (verb === '%' ? '%' : show(args[n++])));
}

const indent = (width: number, s: Value) => {
  const pad = ' '.repeat(width);
  return pad + show(s).replace(/\n/g, `\n${pad}`);
};

interface Scope {
  dot: Value;
  vars: Map<string, Value>;
}

export class HelmTemplates {
  private readonly defines = new Map<string, Node[]>();
  private readonly files = new Map<string, Node[]>();
  private readonly fns: Record<string, Fn>;

  constructor(sources: Record<string, string>) {
    for (const [file, text] of Object.entries(sources)) this.files.set(file, parse(text, file, this.defines));
    this.fns = {
      default: (d, v) => (empty(v) ? d : v),
      quote: (...a) => a.filter((x) => x !== undefined && x !== null).map((x) => JSON.stringify(show(x))).join(' '),
      toYaml: (v) => (v === undefined || v === null ? '' : YAML.stringify(v, { sortMapEntries: true, lineWidth: 0 }).replace(/\n$/, '')),
      nindent: (w, s) => `\n${indent(Number(w), s)}`,
      indent: (w, s) => indent(Number(w), s),
      trunc: (n, s) => show(s).slice(0, Number(n)),
      trimSuffix: (suffix, s) => (show(s).endsWith(show(suffix)) ? show(s).slice(0, -show(suffix).length || undefined) : show(s)),
      printf: (f, ...a) => printf(show(f), ...a),
      contains: (sub, s) => show(s).includes(show(sub)),
      required: (msg, v) => {
        if (v === undefined || v === null || v === '') throw new Error(show(msg));
        return v;
      },
      b64enc: (s) => Buffer.from(show(s), 'utf8').toString('base64'),
      eq: (a, ...b) => b.some((x) => x === a),
      ne: (a, b) => a !== b,
      not: (v) => empty(v),
      and: (...a) => a.find((x) => empty(x)) ?? a[a.length - 1],
      or: (...a) => a.find((x) => !empty(x)) ?? a[a.length - 1],
      include: (name, data) => this.include(show(name), data),
    };
  }

  /** Renders every template file whose name does not start with `_` (as `helm template` does). */
  renderAll(context: Record<string, Value>): Map<string, string> {
    const out = new Map<string, string>();
    for (const file of this.files.keys()) if (!path.basename(file).startsWith('_')) out.set(file, this.render(file, context));
    return out;
  }

  render(file: string, context: Value): string {
    const nodes = this.files.get(file);
    if (!nodes) throw new Error(`no template ${file}`);
    return this.exec(nodes, { dot: context, vars: new Map([['$', context]]) });
  }

  private include(name: string, data: Value): string {
    const nodes = this.defines.get(name);
    if (!nodes) throw new Error(`template: no template "${name}"`);
    return this.exec(nodes, { dot: data, vars: new Map([['$', data]]) });
  }

  private exec(nodes: Node[], scope: Scope): string {
    let out = '';
    for (const node of nodes) {
      if (node.t === 'text') out += node.v;
      else if (node.t === 'out') {
        const v = this.pipe(node.pipe, scope);
        if (!node.pipe.decl) out += show(v);
      } else if (node.t === 'if') {
        const hit = node.branches.find((b) => !empty(this.pipe(b.cond, scope)));
        const body = hit ? hit.body : node.otherwise;
        if (body) out += this.exec(body, { dot: scope.dot, vars: new Map(scope.vars) });
      } else {
        const coll = this.pipe({ ...node.pipe, decl: undefined }, scope);
        const entries: Array<[Value, Value]> = Array.isArray(coll) ? coll.map((v, i) => [i, v]) : isMap(coll) ? Object.keys(coll).sort().map((k) => [k, coll[k]]) : [];
        if (coll !== undefined && coll !== null && !Array.isArray(coll) && !isMap(coll)) throw new Error(`template: range over ${typeof coll}`);
        if (!entries.length && node.otherwise) out += this.exec(node.otherwise, scope);
        for (const [k, v] of entries) {
          const vars = new Map(scope.vars);
          const decl = node.pipe.decl ?? [];
          if (decl.length === 1) vars.set(decl[0], v);
          if (decl.length === 2) (vars.set(decl[0], k), vars.set(decl[1], v));
          out += this.exec(node.body, { dot: v, vars });
        }
      }
    }
    return out;
  }

  private pipe(p: Pipe, scope: Scope): Value {
    let prev: Value;
    let first = true;
    for (const cmd of p.cmds) {
      const [head, ...rest] = cmd;
      if (head.t === 'fn') {
        const fn = this.fns[head.name];
        if (!fn) throw new Error(`template: function "${head.name}" is outside the chart's template subset`);
        const args = rest.map((o) => this.operand(o, scope));
        prev = fn(...(first ? args : [...args, prev]));
      } else {
        if (rest.length || !first) throw new Error('template: a value cannot take arguments');
        prev = this.operand(head, scope);
      }
      first = false;
    }
    if (p.decl?.length === 1) scope.vars.set(p.decl[0], prev);
    return prev;
  }

  private operand(o: Operand, scope: Scope): Value {
    if (o.t === 'lit') return o.v;
    if (o.t === 'sub') return this.pipe(o.pipe, scope);
    if (o.t === 'fn') {
      const fn = this.fns[o.name];
      if (!fn) throw new Error(`template: function "${o.name}" is outside the chart's template subset`);
      return fn();
    }
    let v: Value = o.base === 'dot' ? scope.dot : scope.vars.get(o.base);
    if (o.base !== 'dot' && !scope.vars.has(o.base)) throw new Error(`template: undefined variable ${o.base}`);
    for (const key of o.path) v = isMap(v) ? v[key] : undefined;
    return v;
  }
}

/** Helm's merge of user values over the chart's: maps merge key by key, anything else replaces, null deletes. */
export function mergeValues(base: Value, over: Value): Value {
  if (!isMap(base) || !isMap(over)) return over === undefined ? base : over;
  const out: Record<string, Value> = { ...base };
  for (const [k, v] of Object.entries(over)) {
    if (v === null) delete out[k];
    else out[k] = mergeValues(base[k], v);
  }
  return out;
}

export interface RenderedChart {
  /** Rendered text by template path (templates/x.yaml). */
  files: Map<string, string>;
  /** Every object of the rendered YAML files, in file order. */
  objects: Array<Record<string, Value>>;
  notes: string;
}

/** `helm template <release> <chartDir> --namespace <ns> -f <values>`, for the chart's subset. */
export function renderChart(chartDir: string, overrides: Record<string, Value> = {}, release: { name: string; namespace: string; isUpgrade?: boolean }): RenderedChart {
  const chart = YAML.parse(fs.readFileSync(path.join(chartDir, 'Chart.yaml'), 'utf8')) as Record<string, Value>;
  const values = mergeValues(YAML.parse(fs.readFileSync(path.join(chartDir, 'values.yaml'), 'utf8')), overrides);
  const dir = path.join(chartDir, 'templates');
  const sources: Record<string, string> = {};
  for (const f of fs.readdirSync(dir).sort()) sources[`templates/${f}`] = fs.readFileSync(path.join(dir, f), 'utf8');
  const templates = new HelmTemplates(sources);
  const context = {
    Values: values,
    Chart: { Name: chart.name, Version: chart.version, AppVersion: chart.appVersion, Description: chart.description },
    Release: { Name: release.name, Namespace: release.namespace, Service: 'Helm', IsInstall: !release.isUpgrade, IsUpgrade: !!release.isUpgrade, Revision: 1 },
  };
  const files = templates.renderAll(context);
  const objects: Array<Record<string, Value>> = [];
  for (const [file, text] of files) {
    if (!file.endsWith('.yaml')) continue;
    for (const doc of YAML.parseAllDocuments(text)) {
      if (doc.errors.length) throw new Error(`${file}: ${doc.errors[0].message}\n${text}`);
      const obj = doc.toJS() as Record<string, Value> | null;
      if (obj) objects.push(obj);
    }
  }
  return { files, objects, notes: files.get('templates/NOTES.txt') ?? '' };
}
