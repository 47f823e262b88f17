import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

export interface TempFolders {
  /** A new folder in the system's temporary directory, its name starting with `prefix`. */
  make(prefix: string): string;
  /** Removes every folder made so far. */
  removeAll(): void;
}

/** Temporary folders made and removed together (a test app's, removed when it closes). */
export function tempFolders(): TempFolders {
  const made: string[] = [];
  return {
    make(prefix) {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
      made.push(dir);
      return dir;
    },
    removeAll() {
      for (const dir of made.splice(0)) fs.rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
    },
  };
}

/**
 * Temporary folders a test file makes (`make(prefix)`), removed after its last test. Call it at the
 * top of the file: it declares the `afterAll` that removes them.
 */
export function tempDirs(): Pick<TempFolders, 'make'> {
  const folders = tempFolders();
  afterAll(() => folders.removeAll());
  return folders;
}
