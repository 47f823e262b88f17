import * as fs from 'node:fs';
import * as path from 'node:path';

/**
 * A capability owns its tables; the platform asks it through ports and purgers (docs/development.md,
 * Layout). This scan collects the tables the capabilities declare (`@Entity({ name })` in any file
 * under src/capabilities/) and fails when a file under src/platform/ names one of them as an SQL
 * identifier (`"run"`, as every statement of the host quotes its identifiers). Specs are not
 * scanned: their SQL is sample text (a query builder's output over a made-up `goal` query), not the platform's.
 */
const ROOT = path.resolve(__dirname, '..', '..');

function files(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? files(path.join(dir, e.name)) : e.name.endsWith('.ts') ? [path.join(dir, e.name)] : []));
}

const rel = (f: string) => path.relative(ROOT, f).split(path.sep).join('/');

/** The table names `text` declares with `@Entity({ name: '...' })` or `@Entity('...')`. */
export function declaredTables(text: string): string[] {
  return [...text.matchAll(/@Entity\(\s*(?:\{[^}]*?\bname:\s*)?['"]([a-z0-9_]+)['"]/g)].map((m) => m[1]);
}

/** The tables of `tables` that `text` names as a quoted SQL identifier, once each. */
export function namedTables(text: string, tables: readonly string[]): string[] {
  return tables.filter((t) => new RegExp(`"${t}"`).test(text));
}

/**
 * Platform files that still name a capability's table, with the tables, and why. Only ever shrinks:
 * an entry that is no longer true fails the scan until removed.
 */
const STILL_NAMING: Record<string, string[]> = {};

describe('the platform names no capability table', () => {
  const capabilityTables = [...new Set(files(path.join(ROOT, 'src', 'capabilities')).flatMap((f) => declaredTables(fs.readFileSync(f, 'utf8'))))].sort();

  it('finds the capability tables it guards (the scan reads the entities it means to)', () => {
    expect(capabilityTables).toEqual(expect.arrayContaining(['approval', 'approval_decision', 'goal', 'goal_run', 'run', 'run_artifact', 'run_node', 'webhook_delivery']));
    // The platform's own tables are not among them.
    expect(capabilityTables).not.toContain('event');
    expect(capabilityTables).not.toContain('activity_invocation');
  });

  it('no file under src/platform/ names a table a capability declares (outside the shrinking list)', () => {
    const found: Record<string, string[]> = {};
    for (const f of files(path.join(ROOT, 'src', 'platform'))) {
      if (f.endsWith('.spec.ts')) continue;
      const named = namedTables(fs.readFileSync(f, 'utf8'), capabilityTables);
      if (named.length) found[rel(f)] = named;
    }
    const unlisted = Object.entries(found).flatMap(([f, ts]) => ts.filter((t) => !(STILL_NAMING[f] ?? []).includes(t)).map((t) => `${f} names "${t}"`));
    expect(unlisted).toEqual([]);
    const stale = Object.entries(STILL_NAMING).flatMap(([f, ts]) => ts.filter((t) => !(found[f] ?? []).includes(t)).map((t) => `${f} no longer names "${t}": remove it from STILL_NAMING`));
    expect(stale).toEqual([]);
  });

  it('would fail on a platform file whose SQL names a capability table (synthetic cases)', () => {
    const tables = ['run', 'run_node', 'approval'];
    expect(declaredTables(`@Entity({ name: 'run_node' })\nexport class A {}\n@Entity('approval') class B {}`)).toEqual(['run_node', 'approval']);
    expect(namedTables('await m.query(`DELETE FROM "run_node" WHERE "run_id" = ANY($1)`)', tables)).toEqual(['run_node']);
    expect(namedTables('`SELECT 1 FROM "approval" a JOIN "run" r ON r."id" = a."run_id"`', tables)).toEqual(['run', 'approval']);
    // Columns and the platform's own tables are not tables of a capability.
    expect(namedTables('`DELETE FROM "event" e WHERE e."run_id" = $1 AND e."stream_id" = $2`', tables)).toEqual([]);
  });
});
