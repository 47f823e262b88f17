import * as fs from 'node:fs';
import * as path from 'node:path';

/**
 * The platform never reaches up: nothing under src/platform imports a capability, the application
 * root (app.module, entities, bootstrap, the CLI, the OpenAPI generator) or the migrations folder.
 * The application root composes those and hands them to the platform (HOST_SCHEMA, AppModule.forRoot).
 * A static scan of the import specifiers, so a lazy `import()` or `require()` is caught too.
 */
const ROOT = path.resolve(__dirname, '..', '..');
const PLATFORM = path.join(ROOT, 'src', 'platform');
const FORBIDDEN = ['src/capabilities', 'src/app.module', 'src/entities', 'src/bootstrap', 'src/main', 'src/cli', 'src/openapi-generate', 'migrations'];
// src/transport/grpc/grpc-config (the gRPC transport's settings, read into HostConfig) is the one
// known upward import left; it is a transport, not a capability, and moves with that folder's owners.

function files(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? files(path.join(dir, e.name)) : e.name.endsWith('.ts') ? [path.join(dir, e.name)] : []));
}

export function upwardImports(file: string, text: string): string[] {
  const found: string[] = [];
  for (const m of text.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|\brequire\s*\(\s*|\bimport\s+)['"]([^'"]+)['"]/g)) {
    const spec = m[1];
    if (!spec.startsWith('.')) continue;
    const target = path.relative(ROOT, path.resolve(path.dirname(file), spec)).split(path.sep).join('/');
    if (FORBIDDEN.some((f) => target === f || target.startsWith(`${f}/`) || target.startsWith(`${f}.`))) found.push(`${path.relative(ROOT, file)} imports ${spec}`);
  }
  return found;
}

describe('platform layering', () => {
  it('no file under src/platform imports a capability, the application root or the migrations', () => {
    const offenders = files(PLATFORM).flatMap((f) => upwardImports(f, fs.readFileSync(f, 'utf8')));
    expect(offenders).toEqual([]);
  });

  it('the scan sees static, type-only, dynamic and require imports', () => {
    const f = path.join(PLATFORM, 'x', 'y.ts');
    expect(
      upwardImports(
        f,
        [
          "import { A } from '../../capabilities/goals/goals.module';",
          "import type { B } from '../../entities';",
          "const m = await import('../../../migrations');",
          "require('../../app.module');",
          "import '../../capabilities/runs/runs.module';",
          "import { C } from '../events/event-log.service';",
          "import { D } from '@nestjs/common';",
        ].join('\n'),
      ),
    ).toHaveLength(5);
  });
});
