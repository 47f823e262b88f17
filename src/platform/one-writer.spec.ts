import * as fs from 'node:fs';
import * as path from 'node:path';

/**
 * One writer per table, one LISTEN connection, periodic work on the scheduler (the structure issue,
 * item 4): scans of every source file under src/ (spec files excepted) that fail when a second
 * write path, listener or timer loop appears. Each scan is a function of the files' texts, fed
 * synthetic violations below to show it can fail.
 */
const ROOT = path.resolve(__dirname, '..', '..');

interface Rule {
  /** What the rule keeps in one place. */
  what: string;
  /** A line that breaks it. */
  pattern: RegExp;
  /** The files allowed to hold such a line, each with the reason. */
  allowed: Record<string, string>;
}

export const RULES: Rule[] = [
  {
    what: 'rowsOf (reading a raw query answer) is defined once',
    // A definition, or an inline copy of its rule ([rows, count] or rows).
    pattern: /\bfunction\s+rowsOf\b|\b(?:const|let)\s+rowsOf\s*=|Array\.isArray\((\w+)\)\s*&&\s*(?:\1\.length\s*===\s*2\s*&&\s*)?Array\.isArray\(\1\[0\]\)/,
    allowed: { 'src/platform/database/rows.ts': 'the one rowsOf' },
  },
  {
    what: 'LISTEN is issued on the one notification connection',
    pattern: /['"`]\s*(?:UN)?LISTEN\b/,
    allowed: { 'src/platform/database/database-notifications.ts': "the process's one LISTEN connection, shared by every listener" },
  },
  {
    what: 'the goal and goal_run tables are written by the goal store',
    pattern: /\b(?:INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+"?goal(?:_run)?"?(?=[\s(]|$)|getRepository\(\s*Goal(?:Run)?Entity\s*\)\s*\.\s*(?:insert|update|save|delete|remove|upsert|increment|decrement|softDelete|restore)\s*\(/i,
    allowed: { 'src/capabilities/goals/goal-store.ts': 'the goal store' },
  },
  {
    what: 'the workspace tables are written by the workspace store',
    pattern: /\b(?:INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+"?workspace_(?:store|file|file_version|run_snapshot)"?(?=[\s(]|$)|getRepository\(\s*Workspace(?:Store|File|FileVersion|RunSnapshot)Entity\s*\)\s*\.\s*(?:insert|update|save|delete|remove|upsert|increment|decrement)\s*\(/i,
    allowed: { 'src/capabilities/workspace/workspace-store.ts': 'the workspace store: every write takes its store row lock first' },
  },
  {
    what: 'events (and their streams) are inserted by the event log',
    pattern: /\bINSERT\s+INTO\s+"?event(?:_stream)?"?(?=[\s(]|$)/i,
    allowed: { 'src/platform/events/event-log.service.ts': "the event log's one insert (eventInsertCtes), which the run engine's fenced flush embeds" },
  },
  {
    what: 'periodic work runs on the platform scheduler',
    pattern: /\bsetInterval\s*\(/,
    allowed: {
      'src/platform/scheduler/periodic-task.service.ts': "the scheduler's ticker of once-across-replicas tasks",
      'src/platform/scheduler/local-task.ts': "the scheduler's per-replica loops (PeriodicTaskService.every)",
      'src/platform/http/send-timeout.ts': 'a timer of one response (a client that stopped reading), not periodic work',
      'src/platform/database/embedded-wire-server.ts': "the embedded engine's socket server sweeping its own connections: part of the database, not host work",
      'src/transport/grpc/grpc-listener.ts': "the gRPC health status refresh, to move onto the scheduler with the transport's rework",
    },
  },
];

/** Lines breaking a rule outside its allowed files, as `file:line: text`. */
export function violations(rule: Rule, files: Map<string, string>): string[] {
  const out: string[] = [];
  for (const [file, text] of files) {
    if (file in rule.allowed) continue;
    text.split('\n').forEach((line, i) => {
      const code = line.replace(/\/\/.*$/, '');
      if (/^\s*\*/.test(code)) return;
      if (rule.pattern.test(code)) out.push(`${file}:${i + 1}: ${line.trim()}`);
    });
  }
  return out;
}

function sources(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return sources(p);
    return /\.tsx?$/.test(e.name) && !/\.spec\.tsx?$/.test(e.name) ? [p] : [];
  });
}

describe('one writer per table, one listener, one scheduler', () => {
  const files = new Map(sources(path.join(ROOT, 'src')).map((f) => [path.relative(ROOT, f).split(path.sep).join('/'), fs.readFileSync(f, 'utf8')] as const));

  for (const rule of RULES) {
    it(`${rule.what}: nowhere else`, () => {
      expect(violations(rule, files)).toEqual([]);
    });
  }

  it('every allowed file exists and still needs its place (remove an entry that no longer does)', () => {
    const stale = RULES.flatMap((r) => Object.keys(r.allowed).filter((f) => !files.has(f) || !files.get(f)!.split('\n').some((l) => r.pattern.test(l))).map((f) => `${r.what}: ${f}`));
    expect(stale).toEqual([]);
  });

  describe('fails on a regression (synthetic files)', () => {
    const rule = (what: string) => RULES.find((r) => r.what.startsWith(what))!;
    const scan = (what: string, text: string) => violations(rule(what), new Map([['src/capabilities/x/x.ts', text]]));

    it('a second rowsOf, or an inline copy of its rule', () => {
      expect(scan('rowsOf', 'export function rowsOf<T>(res: unknown): T[] {')).toHaveLength(1);
      expect(scan('rowsOf', 'const rows = (Array.isArray(r) && Array.isArray(r[0]) ? r[0] : r) as X[];')).toHaveLength(1);
      expect(scan('rowsOf', 'if (Array.isArray(res) && res.length === 2 && Array.isArray(res[0])) return res[0];')).toHaveLength(1);
      expect(scan('rowsOf', "import { rowsOf } from '../../platform/database/rows';\nconst rows = rowsOf<X>(await ds.query(sql));")).toEqual([]);
    });

    it('a LISTEN of its own', () => {
      expect(scan('LISTEN', 'await client.query(`LISTEN "${CHANNEL}"`);')).toHaveLength(1);
      expect(scan('LISTEN', "await client.query('UNLISTEN \"x\"');")).toHaveLength(1);
      expect(scan('LISTEN', 'this.notifications.subscribe(CHANNEL, handler); // not a LISTEN of its own')).toEqual([]);
    });

    it('a goal written beside the store', () => {
      expect(scan('the goal', 'await m.query(`UPDATE "goal" g SET "state" = $1 WHERE g."id" = $2`, [s, id]);')).toHaveLength(1);
      expect(scan('the goal', '`INSERT INTO "goal_run" ("tenant") VALUES ($1)`')).toHaveLength(1);
      expect(scan('the goal', 'DELETE FROM goal WHERE "tenant" = $1')).toHaveLength(1);
      expect(scan('the goal', 'await m.getRepository(GoalEntity).update({ id }, { paused: true });')).toHaveLength(1);
      expect(scan('the goal', 'await this.ds.getRepository(GoalEntity).findOne({ where });')).toEqual([]);
      expect(scan('the goal', 'UPDATE "goal_template" SET "x" = 1')).toEqual([]);
    });

    it('a workspace file written beside the store', () => {
      expect(scan('the workspace', 'await m.query(`UPDATE "workspace_file" SET "deleted" = true WHERE "path" = $1`, [p]);')).toHaveLength(1);
      expect(scan('the workspace', 'DELETE FROM workspace_file_version WHERE "tenant" = $1')).toHaveLength(1);
      expect(scan('the workspace', 'INSERT INTO "workspace_run_snapshot" ("tenant") VALUES ($1)')).toHaveLength(1);
      expect(scan('the workspace', 'await this.ds.getRepository(WorkspaceFileEntity).save(row);')).toHaveLength(1);
      expect(scan('the workspace', 'await this.ds.getRepository(WorkspaceFileEntity).createQueryBuilder("f")')).toEqual([]);
      expect(scan('the workspace', 'INSERT INTO "workspace_idempotency" ("x") VALUES ($1)')).toEqual([]);
    });

    it('an event inserted around the event log', () => {
      expect(scan('events', 'await m.query(`INSERT INTO "event" ("id", "tenant") SELECT ...`);')).toHaveLength(1);
      expect(scan('events', 'INSERT INTO "event_stream" ("tenant", "stream_id", "last_sequence") VALUES ($1, $2, $3)')).toHaveLength(1);
      expect(scan('events', 'INSERT INTO "event_subscription" ("id") VALUES ($1)')).toEqual([]);
      expect(scan('events', 'await this.events.appendMany(entries, { manager: m });')).toEqual([]);
    });

    it('a periodic loop with a timer of its own', () => {
      expect(scan('periodic', 'this.ticker = setInterval(() => void this.poll(), 1000);')).toHaveLength(1);
      expect(scan('periodic', "this.loop = this.scheduler.every({ name: 'x.poll', intervalMs: 1000, run: () => this.poll() });")).toEqual([]);
      // Words in comments are not code.
      expect(scan('periodic', ' * never setInterval(...) here')).toEqual([]);
    });
  });
});
