import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import { Client } from 'pg';

/**
 * Test databases made and dropped off the tests' path (server mode, a whole Jest run).
 *
 * A fresh database for a test app is a copy of the run's migrated template (template-db.ts), and it is
 * dropped when the app closes. On a busy two-core machine each copy took 1.2 to 1.5 s and each drop
 * up to 2.5 s (a drop forces a checkpoint), time a test file spent waiting. Jest's main process (from
 * globalSetup to globalTeardown, while the workers run the test files) keeps a few copies ready under
 * names of the pool (`owt_pool_<template>_<random>`: made under another name and renamed when complete),
 * and drops the databases the test apps hand back through a queue file. A test app takes a ready copy by
 * renaming it to its own name (a rename fails for all but one taker), and makes one itself when none is
 * ready; at close it appends its database's name to the queue instead of dropping it. The databases
 * still queued and the pool's unused copies are dropped at the end of the run; a run that dies leaves
 * them to the next run's start, which drops pool copies and queued names older than an hour.
 */
export interface DatabasePool {
  stop(): Promise<void>;
}

const POOL_PREFIX = 'owt_pool_';
const MAKING_PREFIX = 'owt_mk_';

/** The pool's names for copies of `template` (a name holds at most 63 bytes). */
function poolPrefix(template: string): string {
  return `${POOL_PREFIX}${template.replace(/^owt_tpl_/, '').slice(0, 16)}_`;
}

function newName(prefix: string): string {
  return `${prefix}${randomBytes(6).toString('hex')}`;
}

/** Starts keeping `size` copies of `template` ready and dropping what `queueFile` names. */
export async function startDatabasePool(adminUrl: string, template: string, queueFile: string, size = 4): Promise<DatabasePool> {
  fs.writeFileSync(queueFile, '');
  const admin = new Client({ connectionString: adminUrl });
  await admin.connect();
  const prefix = poolPrefix(template);
  // Left by a run that died: pool copies and databases half made by an earlier run's pool.
  const { rows: left } = await admin.query<{ datname: string }>(
    `SELECT datname FROM pg_database WHERE (datname LIKE '${POOL_PREFIX}%' OR datname LIKE '${MAKING_PREFIX}%')
       AND coalesce(shobj_description(oid, 'pg_database'), '') < $1`,
    [new Date(Date.now() - 3_600_000).toISOString()],
  );
  for (const { datname } of left) await admin.query(`DROP DATABASE IF EXISTS "${datname}" WITH (FORCE)`).catch(() => undefined);

  let read = 0;
  let stopping = false;
  const made = new Set<string>();
  const queued = (): string[] => {
    const text = fs.readFileSync(queueFile, 'utf8');
    const end = text.lastIndexOf('\n') + 1;
    const names = text.slice(read, end).split('\n').filter((n) => /^owt_[a-z0-9_]+$/.test(n));
    read = end;
    return names;
  };
  const ready = async (): Promise<number> =>
    Number((await admin.query(`SELECT count(*) AS n FROM pg_database WHERE datname LIKE '${prefix}%'`)).rows[0].n);
  const drop = (name: string) => admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`).catch(() => undefined);

  const loop = (async () => {
    const drops: string[] = [];
    while (!stopping) {
      drops.push(...queued());
      let worked = false;
      try {
        // Copies first: a test app waits for one; a drop waits for nobody.
        if ((await ready()) < size) {
          const making = newName(MAKING_PREFIX);
          await admin.query(`CREATE DATABASE "${making}" TEMPLATE "${template}"`);
          await admin.query(`COMMENT ON DATABASE "${making}" IS '${new Date().toISOString()}'`);
          const name = newName(prefix);
          await admin.query(`ALTER DATABASE "${making}" RENAME TO "${name}"`);
          made.add(name);
          worked = true;
        } else if (drops.length) {
          await drop(drops.shift()!);
          worked = true;
        }
      } catch {
        // the server is busy or restarting: try again shortly
      }
      if (!worked) await new Promise((r) => setTimeout(r, 100));
    }
    return drops;
  })();

  return {
    async stop() {
      stopping = true;
      const drops = [...(await loop), ...queued()];
      const { rows } = await admin.query<{ datname: string }>(`SELECT datname FROM pg_database WHERE datname LIKE '${prefix}%'`);
      // Only this pool's own copies: another run on the same server may be using the same template.
      for (const { datname } of rows) if (made.has(datname)) drops.push(datname);
      for (const name of drops) await drop(name);
      await admin.end();
    },
  };
}

/** A ready copy of `template` renamed to `name`, or false when none is ready (the caller makes one). */
export async function takePooledDatabase(admin: Client, template: string, name: string): Promise<boolean> {
  const { rows } = await admin.query<{ datname: string }>(
    `SELECT datname FROM pg_database WHERE datname LIKE '${poolPrefix(template)}%' ORDER BY random() LIMIT 4`,
  );
  for (const { datname } of rows) {
    try {
      await admin.query(`ALTER DATABASE "${datname}" RENAME TO "${name}"`);
      return true;
    } catch {
      // taken by another test app meanwhile
    }
  }
  return false;
}
