import * as fs from 'node:fs';
import * as path from 'node:path';
import * as ts from 'typescript';

/**
 * One logging style (docs/development.md#conventions): a logger gets one argument, an object whose
 * `msg` is the message and whose other keys are the facts (`{ msg: 'goal iteration failed', goalId, err }`),
 * or a constant string when there are no facts. Through PinoNestLogger that object gives the same line
 * whether the Nest Logger has a context or not, and on a raw pino logger the `msg` hook gives it too.
 * A pino-style `(fields, 'message')` call loses its message into `context` on a Logger without one,
 * and a template message folds facts into text no log query can filter on.
 *
 * A static scan of every call `<x>.log|logger.<level>(...)` under src/ (specs excluded).
 */
const ROOT = path.resolve(__dirname, '..', '..', '..');
const LEVELS = new Set(['log', 'error', 'warn', 'debug', 'verbose', 'fatal', 'info', 'trace']);
const LOGGER_NAMES = new Set(['log', 'logger']);

/**
 * Files still written in another style, with how many such calls each holds: their owners convert
 * them. An entry whose file has fewer fails too, so the list only ever shrinks.
 */
const ALLOWED: Record<string, number> = {};

function sources(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return sources(p);
    return e.name.endsWith('.ts') && !e.name.endsWith('.spec.ts') ? [p] : [];
  });
}

function loggerName(e: ts.Expression): string | undefined {
  if (ts.isPropertyAccessExpression(e)) return e.name.text;
  if (ts.isIdentifier(e)) return e.text;
  return undefined;
}

function isConstantText(e: ts.Expression): boolean {
  return ts.isStringLiteral(e) || ts.isNoSubstitutionTemplateLiteral(e);
}

function hasMsg(e: ts.ObjectLiteralExpression): boolean {
  return e.properties.some((p) => (ts.isPropertyAssignment(p) || ts.isShorthandPropertyAssignment(p)) && ts.isIdentifier(p.name) && p.name.text === 'msg');
}

/** The log calls of a source text that are not in the one style, as `line: call`. */
export function offStyleLogCalls(fileName: string, text: string): string[] {
  const sf = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isCallExpression(node) && ts.isPropertyAccessExpression(node.expression) && LEVELS.has(node.expression.name.text)) {
      const target = loggerName(node.expression.expression);
      if (target && LOGGER_NAMES.has(target)) {
        const [first] = node.arguments;
        const ok = node.arguments.length === 1 && (isConstantText(first) || (ts.isObjectLiteralExpression(first) && hasMsg(first)));
        if (!ok) found.push(`${sf.getLineAndCharacterOfPosition(node.getStart()).line + 1}: ${node.getText().split('\n')[0].slice(0, 120)}`);
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return found;
}

describe('logging style', () => {
  const offenders = new Map(
    sources(path.join(ROOT, 'src'))
      .map((f) => [path.relative(ROOT, f).split(path.sep).join('/'), offStyleLogCalls(f, fs.readFileSync(f, 'utf8'))] as const)
      .filter(([, calls]) => calls.length > 0),
  );

  it('every log call under src/ passes one object with `msg` (or a constant string)', () => {
    const unexpected = [...offenders].filter(([f]) => !(f in ALLOWED)).flatMap(([f, calls]) => calls.map((c) => `${f}:${c}`));
    expect(unexpected).toEqual([]);
  });

  it('every allow-listed file still holds exactly its count (lower the count as calls are converted)', () => {
    const drift = Object.entries(ALLOWED)
      .filter(([f, n]) => (offenders.get(f)?.length ?? 0) !== n)
      .map(([f, n]) => `${f}: allowed ${n}, found ${offenders.get(f)?.length ?? 0}`);
    expect(drift).toEqual([]);
  });

  it('the scan tells the styles apart', () => {
    const calls = offStyleLogCalls(
      'x.ts',
      [
        "this.log.error({ msg: 'task failed', task, err });",
        'this.logger.warn({ msg, runId });',
        "this.log.log('the console is not built');",
        "this.logger.error({ task, err }, 'task failed');",
        'this.logger.warn(`credential ${id} could not be re-sealed`);',
        "request.log.info(fields, 'request completed');",
        "this.log.warn({ task: 't' });",
        "console.log('not a logger', 1);",
        "this.audit.record({ a: 1 }, 'x');",
      ].join('\n'),
    );
    expect(calls.map((c) => Number(c.split(':')[0]))).toEqual([4, 5, 6, 7]);
  });
});
