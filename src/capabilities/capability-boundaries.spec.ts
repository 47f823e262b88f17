import * as fs from 'node:fs';
import * as path from 'node:path';

/**
 * A capability reaches another only through that capability's index.ts (its module, public services
 * and public types): a file in capability A importing any other file of capability B fails, type-only
 * imports included, so what B may change without telling anyone stays B's own.
 * A static scan of the import specifiers, so a lazy `import()` or `require()` is caught too.
 */
const ROOT = path.resolve(__dirname, '..', '..');
const CAPABILITIES = path.join(ROOT, 'src', 'capabilities');

function files(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? files(path.join(dir, e.name)) : e.name.endsWith('.ts') ? [path.join(dir, e.name)] : []));
}

/** The capability a path under src/capabilities belongs to (its first folder), if any. */
function capabilityOf(absolute: string): string | undefined {
  const rel = path.relative(CAPABILITIES, absolute).split(path.sep);
  return rel.length > 1 && rel[0] !== '..' ? rel[0] : undefined;
}

export function crossCapabilityImports(file: string, text: string): string[] {
  const own = capabilityOf(file);
  if (!own) return [];
  const found: string[] = [];
  for (const m of text.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|\brequire\s*\(\s*|\bimport\s+)['"]([^'"]+)['"]/g)) {
    const spec = m[1];
    if (!spec.startsWith('.')) continue;
    const target = path.resolve(path.dirname(file), spec);
    const other = capabilityOf(target);
    if (!other || other === own) continue;
    const rel = path.relative(path.join(CAPABILITIES, other), target).split(path.sep).join('/');
    if (rel === '' || rel === 'index' || rel === 'index.ts') continue;
    found.push(`${path.relative(ROOT, file).split(path.sep).join('/')} imports ${spec}`);
  }
  return found;
}

describe('capability boundaries', () => {
  it('no capability imports a file of another capability other than its index.ts', () => {
    const offenders = files(CAPABILITIES).flatMap((f) => crossCapabilityImports(f, fs.readFileSync(f, 'utf8')));
    expect(offenders).toEqual([]);
  });

  it('every capability has an index.ts', () => {
    const rooms = fs.readdirSync(CAPABILITIES, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name);
    expect(rooms.filter((r) => !fs.existsSync(path.join(CAPABILITIES, r, 'index.ts')))).toEqual([]);
  });

  it('the scan sees static, type-only, dynamic and require imports, and lets index imports through', () => {
    const f = path.join(CAPABILITIES, 'runs', 'x', 'y.ts');
    expect(
      crossCapabilityImports(
        f,
        [
          "import { A } from '../../approvals/approvals.service';",
          "import type { B } from '../../tool-catalog/sources/pack-directory';",
          "const m = await import('../../proposals/proposals.module');",
          "require('../../goals/goal.entity');",
          "import '../../webhooks/webhooks.module';",
          "import { C } from '../../approvals';",
          "import { D } from '../../tool-catalog/index';",
          "import { E } from '../run-node.entity';",
          "import { F } from '../../../platform/events/event-log.service';",
          "import { G } from '@nestjs/common';",
        ].join('\n'),
      ),
    ).toHaveLength(5);
    // The root of the capabilities folder (src/capabilities/index.ts) belongs to no capability.
    expect(crossCapabilityImports(path.join(CAPABILITIES, 'index.ts'), "import { X } from './runs/runs.module';")).toEqual([]);
  });
});
