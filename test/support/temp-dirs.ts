import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

/**
 * Temporary folders a test file makes (`make(prefix)`, in the system's temporary directory), removed
 * after its last test. Call it at the top of the file: it declares the `afterAll` that removes them.
 */
export function tempDirs(): { make(prefix: string): string } {
  const made: string[] = [];
  afterAll(() => {
    for (const dir of made.splice(0)) fs.rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
  });
  return {
    make(prefix) {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
      made.push(dir);
      return dir;
    },
  };
}
