import * as fs from 'node:fs';
import * as path from 'node:path';

/**
 * Failures are thrown as classes that say whose they are (docs/development.md#conventions): a
 * DomainError for what a request did wrong, an InternalFault (WiringFault, InvariantViolation,
 * ExtensionFault) for the host's own failures, a ConfigError for a setting. A bare `throw new Error(`
 * under src/ (specs excluded) is allowed only where its message is the whole answer to a person
 * at a terminal, listed here with its count.
 */
const ROOT = path.resolve(__dirname, '..', '..', '..');

const ALLOWED: Record<string, { count: number; why: string }> = {
  'src/cli/host-client.ts': { count: 2, why: "CLI: the host's error answer, printed as the command error" },
  'src/cli/host-commands.ts': { count: 1, why: 'CLI: names the command to run first (pending migrations)' },
  'src/cli/packs.cli.ts': { count: 2, why: 'CLI: a FILE or DIR argument that names no pack file' },
  'src/cli/runs.cli.ts': { count: 3, why: 'CLI: a malformed --input, a run that cannot be followed; printed as the command error' },
  'src/transport/grpc/error-status.ts': { count: 1, why: "a gRPC client's decoding of a status it received; the host never calls it" },
};

function sources(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return sources(p);
    return e.name.endsWith('.ts') && !e.name.endsWith('.spec.ts') ? [p] : [];
  });
}

/** How many times the text throws a bare Error (comments included: a commented-out throw is one to delete). */
export function bareThrows(text: string): number {
  return text.match(/\bthrow\s+new\s+Error\s*\(/g)?.length ?? 0;
}

describe('error classes', () => {
  const counts = new Map(
    sources(path.join(ROOT, 'src'))
      .map((f) => [path.relative(ROOT, f).split(path.sep).join('/'), bareThrows(fs.readFileSync(f, 'utf8'))] as const)
      .filter(([, n]) => n > 0),
  );

  it('no file under src/ throws a bare Error beyond its allowance', () => {
    const over = [...counts].filter(([f, n]) => n > (ALLOWED[f]?.count ?? 0)).map(([f, n]) => `${f}: ${n} (allowed ${ALLOWED[f]?.count ?? 0})`);
    expect(over).toEqual([]);
  });

  it('every allowance is still used in full (lower it as sites are converted)', () => {
    const stale = Object.entries(ALLOWED)
      .filter(([f, a]) => (counts.get(f) ?? 0) !== a.count)
      .map(([f, a]) => `${f}: allowed ${a.count}, found ${counts.get(f) ?? 0}`);
    expect(stale).toEqual([]);
  });

  it('counts the throws it is meant to', () => {
    expect(bareThrows("throw new Error('a'); throw   new Error(`b`); throw new WiringFault('c'); reject(new Error('d'));")).toBe(2);
  });
});
