import * as fs from 'node:fs';
import * as path from 'node:path';
import { WiringFault } from './errors/internal-fault';

/**
 * The folder holding the host's package.json (and schemas/), found by walking up from this file, so
 * the same code runs from src/ (compiled on the fly) and from the build in dist/src/ (one level deeper).
 */
function findProjectRoot(from: string): string {
  for (let dir = from; ; dir = path.dirname(dir)) {
    const manifest = path.join(dir, 'package.json');
    if (fs.existsSync(manifest) && (JSON.parse(fs.readFileSync(manifest, 'utf8')) as { name?: string }).name === 'openwop-host') return dir;
    if (path.dirname(dir) === dir) throw new WiringFault(`cannot find the openwop-host package.json above ${from}`);
  }
}

export const PROJECT_ROOT = findProjectRoot(__dirname);
