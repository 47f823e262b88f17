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

/** The room that declares each table: `platform`, or the capability's folder under src/capabilities/. */
function tableOwners(): Map<string, string> {
  const owners = new Map<string, string>();
  for (const [dir, room] of [[path.join(ROOT, 'src', 'platform'), () => 'platform'], [path.join(ROOT, 'src', 'capabilities'), (f: string) => rel(f).split('/')[2]]] as const) {
    for (const f of files(dir)) for (const t of declaredTables(fs.readFileSync(f, 'utf8'))) owners.set(t, room(f));
  }
  return owners;
}

/**
 * The triggers the migrations (read in order, a function's last definition winning) create: the
 * table each is on and the tables its function names. A trigger that reaches the tables of another
 * room than its table's is a capability hanging its behaviour on someone else's table.
 */
export function triggers(migrations: string[]): Array<{ name: string; on: string; reaches: string[] }> {
  const bodies = new Map<string, string>();
  const found = new Map<string, { on: string; fn: string }>();
  for (const text of migrations) {
    for (const m of text.matchAll(/FUNCTION\s+"([a-z0-9_]+)"\(\)\s+RETURNS\s+trigger[\s\S]*?\$\$([\s\S]*?)\$\$/g)) bodies.set(m[1], m[2]);
    for (const m of text.matchAll(/CREATE TRIGGER\s+"([a-z0-9_]+)"[\s\S]*?\bON\s+"([a-z0-9_]+)"[\s\S]*?EXECUTE FUNCTION\s+"([a-z0-9_]+)"/g)) found.set(m[1], { on: m[2], fn: m[3] });
  }
  return [...found].map(([name, t]) => ({ name, on: t.on, reaches: [...new Set([...(bodies.get(t.fn) ?? '').matchAll(/"([a-z0-9_]+)"/g)].map((m) => m[1]))] }));
}

/** Triggers whose function reaches tables of another room, with why each stays. Only ever shrinks. */
const CROSSING_TRIGGERS: Record<string, string> = {
  // The webhook outbox (migration 1764910000000): a trigger on the platform's event table writes the
  // deliveries of every committed event in the appending transaction, whichever writer inserted it,
  // and reads the run's tags and fork mode after the statement, when a run inserted by the same
  // statement as its first events is visible; an in-statement hook of the event log would not see
  // that run row (docs/development.md, "A capability owns its tables").
  event_webhook_enqueue: 'event -> run, webhook_delivery, webhook_subscription',
};

describe('triggers live with the owner of their table', () => {
  const owners = tableOwners();
  const dir = path.join(ROOT, 'migrations');
  const all = triggers(fs.readdirSync(dir).filter((f) => /^\d+-.*\.ts$/.test(f)).sort().map((f) => fs.readFileSync(path.join(dir, f), 'utf8')));

  /** The tables of other rooms (known owners only) that a trigger reaches. */
  const crossing = (t: { on: string; reaches: string[] }) => t.reaches.filter((x) => owners.has(x) && owners.has(t.on) && owners.get(x) !== owners.get(t.on));

  it('no trigger reaches the tables of a room other than its table\'s (outside the shrinking list)', () => {
    expect(all.map((t) => t.name)).toEqual(expect.arrayContaining(['event_webhook_enqueue', 'audit_entry_append_only']));
    const found = Object.fromEntries(all.filter((t) => crossing(t).length).map((t) => [t.name, `${t.on} -> ${crossing(t).sort().join(', ')}`]));
    expect(found).toEqual(CROSSING_TRIGGERS);
  });

  it('would fail on a trigger of one room\'s table that writes another\'s (synthetic case)', () => {
    const [t] = triggers([
      'CREATE OR REPLACE FUNCTION "f"() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN INSERT INTO "goal_run" ("x") VALUES (1); RETURN NULL; END $$',
      'CREATE TRIGGER "run_goal_hook" AFTER INSERT ON "run" FOR EACH ROW EXECUTE FUNCTION "f"()',
    ]);
    // Quoted columns are reached too, but only tables with a known owner count.
    expect(t).toEqual({ name: 'run_goal_hook', on: 'run', reaches: ['goal_run', 'x'] });
    expect(crossing(t)).toEqual(['goal_run']);
  });
});

