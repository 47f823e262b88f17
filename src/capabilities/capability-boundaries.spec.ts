import * as fs from 'node:fs';
import * as path from 'node:path';
import * as ts from 'typescript';

/**
 * A capability reaches another only through that capability's index.ts (its module, public services
 * and public types): a file in capability A importing any other file of capability B fails, type-only
 * imports included, so what B may change without telling anyone stays B's own. The transports
 * (src/transport/, src/console/) are held to the same rule: they call a capability through its
 * index.ts only, never one of its files. A controller file exports its controller classes and
 * nothing else, so no transport is tempted to reuse logic that lives in a route handler's file.
 * Static scans of the import specifiers (a lazy `import()` or `require()` is caught too) and of
 * each controller file's exports.
 */
const ROOT = path.resolve(__dirname, '..', '..');
const SRC = path.join(ROOT, 'src');
const CAPABILITIES = path.join(SRC, 'capabilities');
/** The transport layer (platform-layering.spec.ts): held to the capabilities' index.ts like another capability. */
const TRANSPORTS = [path.join(SRC, 'transport'), path.join(SRC, 'console')];

function files(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? files(path.join(dir, e.name)) : e.name.endsWith('.ts') ? [path.join(dir, e.name)] : []));
}

const rel = (absolute: string): string => path.relative(ROOT, absolute).split(path.sep).join('/');

/** The capability a path under src/capabilities belongs to (its first folder), if any. */
function capabilityOf(absolute: string): string | undefined {
  const parts = path.relative(CAPABILITIES, absolute).split(path.sep);
  return parts.length > 1 && parts[0] !== '..' ? parts[0] : undefined;
}

function isTransport(absolute: string): boolean {
  return TRANSPORTS.some((t) => absolute === t || absolute.startsWith(`${t}${path.sep}`));
}

/**
 * The imports of `file` (an absolute path) that reach into a capability other than through its
 * index.ts: from another capability, or from a transport. Files elsewhere are not checked here.
 */
export function crossCapabilityImports(file: string, text: string): string[] {
  const own = capabilityOf(file);
  if (!own && !isTransport(file)) return [];
  const found: string[] = [];
  for (const m of text.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|\brequire\s*\(\s*|\bimport\s+)['"]([^'"]+)['"]/g)) {
    const spec = m[1];
    if (!spec.startsWith('.')) continue;
    const target = path.resolve(path.dirname(file), spec);
    const other = capabilityOf(target);
    if (!other || other === own) continue;
    const inRoom = path.relative(path.join(CAPABILITIES, other), target).split(path.sep).join('/');
    if (inRoom === '' || inRoom === 'index' || inRoom === 'index.ts') continue;
    found.push(`${rel(file)} imports ${spec}`);
  }
  return found;
}

/** Whether a class declaration carries Nest's `@Controller(...)` decorator. */
function isController(node: ts.ClassDeclaration): boolean {
  return (ts.getDecorators(node) ?? []).some((d) => ts.isCallExpression(d.expression) && ts.isIdentifier(d.expression.expression) && d.expression.expression.text === 'Controller');
}

/** The names a statement exports, or undefined when it exports nothing. */
function exportedNames(st: ts.Statement): string[] | undefined {
  if (ts.isExportDeclaration(st)) {
    if (!st.exportClause) return ['*'];
    return ts.isNamedExports(st.exportClause) ? st.exportClause.elements.map((e) => e.name.text) : [st.exportClause.name.text];
  }
  if (ts.isExportAssignment(st)) return ['default'];
  const modifiers = ts.canHaveModifiers(st) ? (ts.getModifiers(st) ?? []) : [];
  if (!modifiers.some((m) => m.kind === ts.SyntaxKind.ExportKeyword)) return undefined;
  if (ts.isVariableStatement(st)) return st.declarationList.declarations.map((d) => d.name.getText());
  const name = (st as ts.DeclarationStatement).name;
  return [name && ts.isIdentifier(name) ? name.text : 'default'];
}

/**
 * What a `*.controller.ts` file exports besides its `@Controller()` classes (functions, constants,
 * DTO classes, interfaces, types, re-exports), as `<file> exports <name>`; nothing for other files.
 */
export function controllerFileExports(file: string, text: string): string[] {
  if (!file.endsWith('.controller.ts')) return [];
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  for (const st of source.statements) {
    const names = exportedNames(st);
    if (!names || (ts.isClassDeclaration(st) && isController(st))) continue;
    for (const n of names) found.push(`${rel(file)} exports ${n}`);
  }
  return found;
}

describe('capability boundaries', () => {
  it('no capability imports a file of another capability other than its index.ts', () => {
    const offenders = files(CAPABILITIES).flatMap((f) => crossCapabilityImports(f, fs.readFileSync(f, 'utf8')));
    expect(offenders).toEqual([]);
  });

  it('no transport imports a file of a capability other than its index.ts', () => {
    const scanned = TRANSPORTS.flatMap(files);
    expect(scanned.length).toBeGreaterThan(0);
    const offenders = scanned.flatMap((f) => crossCapabilityImports(f, fs.readFileSync(f, 'utf8')));
    expect(offenders).toEqual([]);
  });

  it('a controller file exports its controller classes only', () => {
    const controllers = files(SRC).filter((f) => f.endsWith('.controller.ts'));
    expect(controllers.length).toBeGreaterThan(0);
    const offenders = controllers.flatMap((f) => controllerFileExports(f, fs.readFileSync(f, 'utf8')));
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

  it('the scan holds the transports to the index.ts, and leaves the platform and the root alone', () => {
    const lines = [
      "import { RunsService } from '../../../capabilities/runs/runs.service';",
      "import type { RunEventsQuery } from '../../../capabilities/runs/runs.dto';",
      "const m = await import('../../../capabilities/webhooks/webhooks.module');",
      "require('../../../capabilities/runs/interrupts/interrupts.controller');",
      "import { RunsModule } from '../../../capabilities/runs';",
      "import { WebhooksService } from '../../../capabilities/webhooks/index';",
      "import { CAPABILITY_MODULES } from '../../../capabilities';",
      "import { AuthGuard } from '../../../platform/identity/auth.guard';",
      "import { EngineCall } from '../engine-method';",
    ].join('\n');
    expect(crossCapabilityImports(path.join(SRC, 'transport', 'grpc', 'methods', 'x.methods.ts'), lines)).toEqual([
      "src/transport/grpc/methods/x.methods.ts imports ../../../capabilities/runs/runs.service",
      "src/transport/grpc/methods/x.methods.ts imports ../../../capabilities/runs/runs.dto",
      "src/transport/grpc/methods/x.methods.ts imports ../../../capabilities/webhooks/webhooks.module",
      "src/transport/grpc/methods/x.methods.ts imports ../../../capabilities/runs/interrupts/interrupts.controller",
    ]);
    // A transport not written yet is held to it the moment it lands (the MCP mount), and the console too.
    expect(crossCapabilityImports(path.join(SRC, 'transport', 'mcp', 'tools.ts'), "import { RunsService } from '../../capabilities/runs/runs.service';")).toHaveLength(1);
    expect(crossCapabilityImports(path.join(SRC, 'console', 'console.module.ts'), "import { A } from '../capabilities/approvals/approvals.service';\nimport { B } from '../capabilities/approvals';")).toHaveLength(1);
    // Not its business: the platform (the layering scan forbids it any capability) and the application root.
    expect(crossCapabilityImports(path.join(SRC, 'platform', 'x.ts'), "import { A } from '../capabilities/runs/runs.service';")).toEqual([]);
    expect(crossCapabilityImports(path.join(SRC, 'app.module.ts'), "import { A } from './capabilities/runs/runs.module';")).toEqual([]);
  });

  it('the controller scan reports every export of a controller file but its @Controller() classes', () => {
    const text = [
      "import { Controller, Get, Injectable } from '@nestjs/common';",
      "export const SCOPE = 'x:read';",
      "export const A = 1, B = 2;",
      "export function helper(): number { return 1; }",
      "export async function reused(): Promise<void> {}",
      "export class SomeBody { a?: string; }",
      "@Injectable()",
      "export class NotARoute {}",
      "export interface View { a: string }",
      "export type Alias = string;",
      "export enum Mode { A }",
      "export { helper as again };",
      "export * from './elsewhere';",
      "export default class {}",
      "class Local {}",
      "const local = 1;",
      "@Controller()",
      "export class FirstController { @Get('/a') a(): number { return local; } }",
      "@Controller('b')",
      "export class SecondController {}",
    ].join('\n');
    const f = path.join(CAPABILITIES, 'runs', 'x.controller.ts');
    expect(controllerFileExports(f, text).map((o) => o.replace('src/capabilities/runs/x.controller.ts exports ', ''))).toEqual([
      'SCOPE', 'A', 'B', 'helper', 'reused', 'SomeBody', 'NotARoute', 'View', 'Alias', 'Mode', 'again', '*', 'default',
    ]);
    // The same text in a file that is not a controller file is not this scan's business.
    expect(controllerFileExports(path.join(CAPABILITIES, 'runs', 'x.service.ts'), text)).toEqual([]);
  });
});
