import * as fs from 'node:fs';
import * as path from 'node:path';

/**
 * Each layer imports only the layers below it (README, Layout): the entry points (src/main, src/cli.ts,
 * src/cli/) over the application root (app.module, entities, bootstrap, the OpenAPI generator) over the
 * transports (src/transport/, src/console/) over the capabilities over the platform. So the platform
 * imports no capability, transport, root or client command, and a capability no transport and no
 * client command; the migrations are handed to the platform by the root (HOST_SCHEMA, AppModule.forRoot),
 * never imported by it. Every file under src/ is scanned, specs included.
 * A static scan of the import specifiers, so a lazy `import()` or `require()` is caught too.
 */
const ROOT = path.resolve(__dirname, '..', '..');
const SRC = path.join(ROOT, 'src');

/** The layers from the top; a file may import its own layer and those after it. */
const LAYERS: Array<{ name: string; paths: string[] }> = [
  { name: 'entry point', paths: ['src/main', 'src/cli'] },
  { name: 'application root', paths: ['src/bootstrap', 'src/app.module', 'src/entities', 'src/openapi-generate'] },
  { name: 'transport', paths: ['src/transport', 'src/console'] },
  { name: 'capability', paths: ['src/capabilities'] },
  { name: 'platform', paths: ['src/platform'] },
];
/** What a layer may not import although it is not above it: the platform is handed the migrations. */
const ALSO_FORBIDDEN: Record<string, string[]> = { platform: ['migrations'] };

function under(target: string, prefix: string): boolean {
  return target === prefix || target.startsWith(`${prefix}/`) || target.startsWith(`${prefix}.`);
}

/** The index in LAYERS of a path relative to the repository root (forward slashes), if it is layered. */
export function layerOf(rel: string): number | undefined {
  const i = LAYERS.findIndex((l) => l.paths.some((p) => under(rel, p)));
  return i < 0 ? undefined : i;
}

function files(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? files(path.join(dir, e.name)) : e.name.endsWith('.ts') ? [path.join(dir, e.name)] : []));
}

/** The imports of `file` (an absolute path) that reach a layer above its own, or something its layer is forbidden. */
export function upwardImports(file: string, text: string): string[] {
  const from = path.relative(ROOT, file).split(path.sep).join('/');
  const own = layerOf(from);
  if (own === undefined) return [];
  const forbidden = ALSO_FORBIDDEN[LAYERS[own].name] ?? [];
  const found: string[] = [];
  for (const m of text.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|\brequire\s*\(\s*|\bimport\s+)['"]([^'"]+)['"]/g)) {
    const spec = m[1];
    if (!spec.startsWith('.')) continue;
    const target = path.relative(ROOT, path.resolve(path.dirname(file), spec)).split(path.sep).join('/');
    const layer = layerOf(target);
    if ((layer !== undefined && layer < own) || forbidden.some((f) => under(target, f))) found.push(`${from} (${LAYERS[own].name}) imports ${spec}`);
  }
  return found;
}

describe('layering', () => {
  it('no file under src/ imports a layer above its own (nor the platform the migrations)', () => {
    // This file is left out: its synthetic cases below are imports of other, made-up files.
    const offenders = files(SRC)
      .filter((f) => f !== __filename)
      .flatMap((f) => upwardImports(f, fs.readFileSync(f, 'utf8')));
    expect(offenders).toEqual([]);
  });

  it('the scan sees static, type-only, dynamic and require imports from the platform', () => {
    const f = path.join(SRC, 'platform', 'x', 'y.ts');
    expect(
      upwardImports(
        f,
        [
          "import { A } from '../../capabilities/goals/goals.module';",
          "import type { B } from '../../entities';",
          "const m = await import('../../../migrations');",
          "require('../../app.module');",
          "import '../../capabilities/runs/runs.module';",
          "import { G } from '../../transport/grpc/grpc-listener';",
          "import type { H } from '../../cli/host-client';",
          "import { C } from '../events/event-log.service';",
          "import { D } from '@nestjs/common';",
        ].join('\n'),
      ),
    ).toHaveLength(7);
  });

  it('a capability may import the platform and another capability, but no transport, client command or root', () => {
    const f = path.join(SRC, 'capabilities', 'runs', 'runs.cli.ts');
    expect(
      upwardImports(
        f,
        [
          "import { call } from '../../cli/host-client';",
          "import { E } from '../../transport/grpc/engine-service';",
          "import { S } from '../../console/console.module';",
          "import { M } from '../../app.module';",
          "import { K } from '../../cli';",
          "import { P } from '../../platform/config/host-config';",
          "import { Q } from '../approvals';",
          "import { R } from './run-store';",
        ].join('\n'),
      ),
    ).toEqual([
      "src/capabilities/runs/runs.cli.ts (capability) imports ../../cli/host-client",
      "src/capabilities/runs/runs.cli.ts (capability) imports ../../transport/grpc/engine-service",
      "src/capabilities/runs/runs.cli.ts (capability) imports ../../console/console.module",
      "src/capabilities/runs/runs.cli.ts (capability) imports ../../app.module",
      "src/capabilities/runs/runs.cli.ts (capability) imports ../../cli",
    ]);
  });

  it('a transport may import capabilities and the platform but not the root; the entry points import anything below', () => {
    expect(upwardImports(path.join(SRC, 'transport', 'grpc', 'a.ts'), "import { A } from '../../capabilities/runs';\nimport { B } from '../../platform/config/host-config';\nimport { C } from '../../bootstrap';")).toEqual([
      'src/transport/grpc/a.ts (transport) imports ../../bootstrap',
    ]);
    expect(upwardImports(path.join(SRC, 'cli', 'a.ts'), "import { A } from '../bootstrap';\nimport { B } from '../capabilities/portability/portability.cli';\nimport { C } from '../transport/grpc/grpc-listener';")).toEqual([]);
  });

  it('places every path the Layout names in its layer', () => {
    expect(['src/main.ts', 'src/cli.ts', 'src/cli/runs.cli.ts', 'src/app.module.ts', 'src/transport/grpc/x.ts', 'src/console/console.module.ts', 'src/capabilities/runs/index.ts', 'src/platform/config/host-config.ts', 'src/client.ts', 'migrations/index.ts'].map(layerOf)).toEqual([
      0, 0, 0, 1, 2, 2, 3, 4, undefined, undefined,
    ]);
  });
});
