import * as fs from 'node:fs';
import * as path from 'node:path';
import * as semver from 'semver';

/**
 * The Node versions the project claims and the ones its dependencies accept must agree: `npm ci` on the
 * declared minimum, and on the Node running the tests, must not warn EBADENGINE. Read from the committed
 * lock file, so a dependency bump that drops our Node fails here before it reaches a machine.
 */
const root = path.join(__dirname, '..', '..');
const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as { engines: { node: string } };
const lock = JSON.parse(fs.readFileSync(path.join(root, 'package-lock.json'), 'utf8')) as {
  packages: Record<string, { version?: string; engines?: Record<string, string> | string[]; os?: string[]; cpu?: string[]; libc?: string[] }>;
};

/** Whether npm would install this lock entry on this platform (platform-specific optional binaries are skipped). */
function installsHere(entry: { os?: string[]; cpu?: string[] }): boolean {
  const allows = (list: string[] | undefined, value: string) =>
    !list || (list.some((v) => !v.startsWith('!')) ? list.includes(value) : !list.includes(`!${value}`));
  return allows(entry.os, process.platform) && allows(entry.cpu, process.arch);
}

/** [package path, node range] of every locked package that declares a Node range. */
function nodeRanges(): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (const [p, entry] of Object.entries(lock.packages)) {
    if (!p || !entry.engines || Array.isArray(entry.engines) || !entry.engines.node) continue;
    if (!installsHere(entry)) continue;
    out.push([`${p}@${entry.version ?? '?'}`, entry.engines.node]);
  }
  return out;
}

describe('Node versions agree', () => {
  it('the lock file has dependencies with Node ranges to check (the walk is not vacuous)', () => {
    expect(nodeRanges().length).toBeGreaterThan(20);
  });

  it('every locked dependency accepts the Node running the tests', () => {
    const excluded = nodeRanges().filter(([, range]) => !semver.satisfies(process.version, range, { includePrerelease: true }));
    expect(excluded).toEqual([]);
  });

  it("every locked dependency accepts the project's declared minimum Node", () => {
    const min = semver.minVersion(pkg.engines.node);
    expect(min).not.toBeNull();
    const excluded = nodeRanges().filter(([, range]) => !semver.satisfies(min!, range));
    expect(excluded).toEqual([]);
  });

  it('the running Node is one the project declares', () => {
    expect(semver.satisfies(process.version, pkg.engines.node)).toBe(true);
  });

  it("the README states the declared minimum", () => {
    const min = semver.minVersion(pkg.engines.node)!;
    const readme = fs.readFileSync(path.join(root, 'README.md'), 'utf8');
    expect(readme).toContain(`Node ${min.major}.${min.minor} or newer`);
  });

  it('detects an excluding range (the check can fail)', () => {
    expect(semver.satisfies(process.version, `>=${semver.major(process.version) + 1}`)).toBe(false);
  });
});

/**
 * npm blocks dependency install scripts unless `allowScripts` in package.json names them; a package
 * it does not cover makes every `npm ci` end with a warning. Each one with a script gets a reviewed
 * decision, so installs stay quiet and a new dependency's script is a deliberate choice.
 */
describe('dependency install scripts', () => {
  const allow = (JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as { allowScripts?: Record<string, boolean> }).allowScripts ?? {};
  const withScripts = Object.entries(lock.packages as Record<string, { version?: string; hasInstallScript?: boolean }>)
    .filter(([p, e]) => p && e.hasInstallScript)
    .map(([p, e]) => ({ name: p.slice(p.lastIndexOf('node_modules/') + 'node_modules/'.length), version: e.version ?? '' }));

  it('every locked package with an install script has a decision in allowScripts', () => {
    expect(withScripts.length).toBeGreaterThan(0);
    const undecided = withScripts.filter(({ name, version }) => !(name in allow) && !(`${name}@${version}` in allow));
    expect(undecided).toEqual([]);
  });

  it('no install script downloads anything: none is allowed to run', () => {
    expect(Object.entries(allow).filter(([, allowed]) => allowed !== false)).toEqual([]);
  });
});
