import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';

/**
 * The committed OpenAPI document passes two independent linters with their stock rulesets:
 * Redocly CLI (`recommended`) and Spectral (`spectral:oas`). No error is allowed; a warning is allowed
 * only when test/platform/openapi-lint/accepted-warnings.txt lists it with a reason, and a listed
 * warning that no longer occurs must be removed from the list (so the list never hides a new one).
 */

const root = path.join(__dirname, '../..');
const here = path.join(__dirname, 'openapi-lint');
const DOCUMENT = path.join(root, 'schemas/openapi.json');

interface Finding {
  tool: 'redocly' | 'spectral';
  rule: string;
  pointer: string;
  error: boolean;
  message: string;
}

const key = (f: Pick<Finding, 'tool' | 'rule' | 'pointer'>) => `${f.tool} ${f.rule} ${f.pointer}`;

/** Runs a linter's bin with this Node; a non-zero exit (it found errors) still yields its report. */
function run(bin: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [path.join(root, 'node_modules', bin), ...args],
      // No telemetry, no update check: the linters run offline.
      { cwd: root, maxBuffer: 64 * 1024 * 1024, env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_COLOR: '1' } },
      (err, stdout, stderr) => {
        if (!stdout.trim()) reject(new Error(`${bin} printed no report (${err?.message ?? 'no error'}): ${stderr}`));
        else resolve(stdout);
      },
    );
  });
}

async function redocly(): Promise<Finding[]> {
  const out = await run('@redocly/cli/bin/cli.js', ['lint', DOCUMENT, '--config', path.join(here, 'redocly.yaml'), '--format', 'json']);
  const report = JSON.parse(out) as { problems: Array<{ ruleId: string; severity: string; message: string; location: Array<{ pointer: string }> }> };
  return report.problems.map((p) => ({ tool: 'redocly', rule: p.ruleId, pointer: p.location[0]?.pointer ?? '#', error: p.severity === 'error', message: p.message }));
}

async function spectral(): Promise<Finding[]> {
  const out = await run('@stoplight/spectral-cli/dist/index.js', ['lint', DOCUMENT, '--ruleset', path.join(here, 'spectral.yaml'), '--format', 'json', '--fail-severity', 'error']);
  const report = JSON.parse(out.slice(out.indexOf('['), out.lastIndexOf(']') + 1)) as Array<{ code: string; severity: number; message: string; path: Array<string | number> }>;
  const pointer = (p: Array<string | number>) => `#${p.map((s) => `/${String(s).replace(/~/g, '~0').replace(/\//g, '~1')}`).join('')}`;
  return report.map((r) => ({ tool: 'spectral', rule: r.code, pointer: pointer(r.path), error: r.severity === 0, message: r.message }));
}

function acceptedWarnings(): Map<string, string> {
  const accepted = new Map<string, string>();
  for (const line of fs.readFileSync(path.join(here, 'accepted-warnings.txt'), 'utf8').split('\n')) {
    if (!line.trim() || line.startsWith('#')) continue;
    const [entry, reason] = line.split(' | ');
    if (!reason?.trim()) throw new Error(`accepted-warnings.txt: "${line}" gives no reason`);
    accepted.set(entry.trim(), reason.trim());
  }
  return accepted;
}

describe('lint of the committed OpenAPI document (Redocly recommended, Spectral spectral:oas)', () => {
  let findings: Finding[];
  beforeAll(async () => {
    findings = (await Promise.all([redocly(), spectral()])).flat();
  }, 120_000);

  it('has no error', () => {
    expect(findings.filter((f) => f.error).map((f) => `${key(f)}: ${f.message}`)).toEqual([]);
  });

  it('has no warning but the accepted ones, each with its reason', () => {
    const accepted = acceptedWarnings();
    const warnings = findings.filter((f) => !f.error);
    const unlisted = warnings.filter((f) => !accepted.has(key(f))).map((f) => `${key(f)}: ${f.message}`);
    if (unlisted.length) throw new Error(`new lint warnings: fix them, or list them with a reason in test/platform/openapi-lint/accepted-warnings.txt:\n${unlisted.join('\n')}`);
    const stale = [...accepted.keys()].filter((k) => !warnings.some((f) => key(f) === k));
    expect(stale).toEqual([]);
  });
});
