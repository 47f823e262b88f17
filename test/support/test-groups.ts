/**
 * Test files run in groups when the whole suite runs (`npm test` with no arguments; see jest.config.js).
 *
 * Jest gives every test file a module registry of its own, so each of the suite's ~300 files loaded
 * `src/` and its dependencies again (about 3,000 modules, 2 s of a quiet core, more under load): most
 * of the suite's time on two cores. A group is one Jest file (`test/groups/group-NN.group.ts`) that
 * requires its share of the test files, each inside a `describe` named after it, so they load the
 * shared modules once. What a test file could count on alone is kept between the files of a group:
 * - `process.env` is put back after each file as it was before it (a file's own top-level changes
 *   apply while its tests run);
 * - spies are restored (`jest.restoreAllMocks`) after each file;
 * - a file whose tests must have a registry of their own stays a Jest file of its own
 *   (`test-groups-plan.js`: snapshots, fake timers, and what `test-groups.json` names with why).
 * `npx jest <path>` and `npm test -- <args>` run the files as they are, one Jest file each.
 *
 * The files are spread over the groups by weight (`test-groups-plan.js`: their measured seconds in
 * `test-weights.json` when known, else their size), so the two workers finish together. A whole grouped run writes each file's seconds to
 * `test/.tmp/spec-durations/` (merged into `test/.tmp/test-durations.txt`), from which
 * `node bin/test-weights.js` refreshes `test-weights.json`.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const plan = require('./test-groups-plan.js') as { ROOT: string; groupPlan(): string[][] };
const ROOT = plan.ROOT;

/** Puts `process.env` back to `saved` in place (code holds references to the object). */
function restoreEnv(saved: Record<string, string | undefined>): void {
  for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k];
  for (const [k, v] of Object.entries(saved)) if (v !== undefined) process.env[k] = v;
}

/** Declares group `index`'s files (called by `test/groups/group-NN.group.ts`). */
export function runGroup(index: number): void {
  const files = plan.groupPlan()[index - 1] ?? [];
  const durations: Record<string, number> = {};
  for (const file of files) {
    const base = { ...process.env };
    let own: Record<string, string | undefined> = base;
    let started = 0;
    describe(file, () => {
      beforeAll(() => {
        started = Date.now();
        restoreEnv(own);
      });
      // Hooks of one block run in the order declared: this one before the file's, the last one after them.
      try {
        require(path.join(ROOT, file));
      } catch (err) {
        // A file that fails to load fails alone, as it would as a Jest file of its own, not its whole group.
        it('loads', () => {
          throw err;
        });
      }
      afterAll(() => {
        jest.restoreAllMocks();
        restoreEnv(base);
        durations[file] = (Date.now() - started) / 1000;
      });
    });
    // What the file's own top-level code set applies while its tests run, not to the next file's.
    own = { ...process.env };
    restoreEnv(base);
  }
  afterAll(() => {
    try {
      const dir = path.join(ROOT, 'test/.tmp/spec-durations');
      fs.mkdirSync(dir, { recursive: true });
      fs.writeFileSync(path.join(dir, `group-${String(index).padStart(2, '0')}.json`), JSON.stringify(durations));
    } catch {
      // a read-only checkout still runs its tests
    }
  });
}
