import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';

/**
 * A migrated embedded database folder for the test run, copied into the data folder of each host
 * process a test starts on a fresh embedded engine (test/support/host-process.ts). A first start
 * creates the database (initdb in WebAssembly, 2.5 s on a two-core machine) and applies every migration
 * (about 1 s more), where copying the 41 MB folder takes 0.2 s; a later start of the same folder is what
 * most of those tests measure. The tests of the first start itself start `openwop-host serve` on a new
 * folder, or pass `freshDatabase: true`.
 *
 * The folder is made by `openwop-host migrate` on an empty data folder, so it holds the migrated schema
 * and nothing a running host writes (no key, no run). It is named after a hash of the migration files
 * and of the embedded engine (its version, and the host's code that makes a new folder), built beside
 * its final place and renamed into it (two workers building at once keep the first and drop the
 * second), and kept under test/.tmp for the next run; folders of other hashes are removed.
 */
const ROOT = path.join(__dirname, '../..');
const BASE = path.join(ROOT, 'test', '.tmp', 'embedded-template');

function templateHash(): string {
  const h = createHash('sha256');
  const dir = path.join(ROOT, 'migrations');
  for (const f of fs.readdirSync(dir).filter((n) => n.endsWith('.ts')).sort()) {
    h.update(f);
    h.update(fs.readFileSync(path.join(dir, f)));
  }
  h.update(fs.readFileSync(path.join(ROOT, 'node_modules', '@electric-sql', 'pglite', 'package.json')));
  // How a new folder is made (initDataFolder) is the host's own code.
  h.update(fs.readFileSync(path.join(ROOT, 'src', 'platform', 'database', 'embedded-postgres.ts')));
  return h.digest('hex').slice(0, 16);
}

let pending: Promise<string> | undefined;

/** The template's `pg` folder (built on first use in this process when no run has built it yet). */
export function embeddedTemplate(): Promise<string> {
  pending ??= build().catch((e: unknown) => {
    pending = undefined;
    throw e;
  });
  return pending;
}

async function build(): Promise<string> {
  const hash = templateHash();
  const done = path.join(BASE, hash, 'pg');
  if (fs.existsSync(path.join(done, 'PG_VERSION'))) return done;
  fs.mkdirSync(BASE, { recursive: true });
  const staging = fs.mkdtempSync(path.join(BASE, `${hash}.building-`));
  try {
    const env: NodeJS.ProcessEnv = { ...process.env, OPENWOP_DATA_DIR: path.join(staging, 'data'), LOG_LEVEL: 'warn' };
    delete env.DATABASE_URL;
    await new Promise<void>((resolve, reject) => {
      execFile(process.execPath, [path.join(ROOT, 'bin', 'openwop-host.js'), 'migrate'], { env, timeout: 300_000, maxBuffer: 8 * 1024 * 1024 }, (err, out, stderr) => {
        if (err) reject(new Error(`building the embedded template failed: ${err.message}\n${out}${stderr}`));
        else resolve();
      });
    });
    const pg = path.join(staging, 'data', 'pg');
    if (!fs.existsSync(path.join(pg, 'PG_VERSION'))) throw new Error(`building the embedded template left no database in ${pg}`);
    fs.mkdirSync(path.join(BASE, hash), { recursive: true });
    try {
      fs.renameSync(pg, done);
    } catch (e) {
      // Another worker finished first: its folder stands.
      if (!fs.existsSync(path.join(done, 'PG_VERSION'))) throw e;
    }
  } finally {
    fs.rmSync(staging, { recursive: true, force: true });
  }
  for (const other of fs.readdirSync(BASE)) {
    if (other !== hash && !other.includes('.building-')) fs.rmSync(path.join(BASE, other), { recursive: true, force: true });
  }
  return done;
}

/** Copies the template into `<dataDir>/pg` unless that folder already holds a database. */
export async function seedEmbeddedDataDir(dataDir: string): Promise<void> {
  const pg = path.join(dataDir, 'pg');
  if (fs.existsSync(path.join(pg, 'PG_VERSION'))) return;
  const template = await embeddedTemplate();
  fs.mkdirSync(dataDir, { recursive: true });
  fs.cpSync(template, pg, { recursive: true });
}
