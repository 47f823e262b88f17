import * as fs from 'node:fs';
import * as path from 'node:path';

/**
 * The runs capability is kept in sub-rooms (docs/development.md, Layout): the engine (runs/engine/),
 * what the transports serve (api/), replay and fork (replay/), interrupts, artifacts, the node
 * executors and the test seams; its root holds only the module, its index, the services other rooms
 * and the transports call, its tables, settings, metrics and advertiser, run creation and the
 * workflow definitions it resolves. A new file directly under runs/ fails here: it goes to the
 * sub-room its meaning calls for, or is added below on purpose (with the reason in review).
 *
 * And no capability looks a provider up at run time through Nest's `ModuleRef`: a dependency is
 * injected, or asked through a platform port (e.g. the run launcher), so the module graph shows it and
 * a cycle fails at start instead of at the first call.
 *
 * A tool's session is opened by the tool catalog only (`ToolCatalogService.open`), whoever calls the
 * tool: a call of a source's `openSession` anywhere else under src/ fails.
 */
const ROOT = path.resolve(__dirname, '..', '..');
const RUNS = path.join(ROOT, 'src', 'capabilities', 'runs');
const CAPABILITIES = path.join(ROOT, 'src', 'capabilities');

/** The sub-rooms of runs/. */
export const RUNS_ROOMS = ['api', 'artifacts', 'budget', 'compensation', 'dead-letters', 'engine', 'executors', 'interrupts', 'replay', 'seams'];

/** The files allowed directly under runs/. */
export const RUNS_ROOT_FILES = [
  'index.ts',
  'runs.module.ts',
  // The services other rooms and the transports call.
  'runs.service.ts',
  'run-launcher.service.ts',
  'run-control.service.ts',
  'transport-runs.service.ts',
  'workflow-resolver.service.ts',
  'workflow-pack-checks.service.ts',
  // Run creation and what it checks.
  'run-creation.service.ts',
  'run-inputs.ts',
  'run-admission.ts',
  // The workflow definitions the resolver serves and checks.
  'workflow-definition.ts',
  'workflow-definition.spec.ts',
  'chain-pack-checks.ts',
  'chain-pack-checks.spec.ts',
  'chain-deferred-parameters.ts',
  'chain-deferred-parameters.spec.ts',
  'chain-subchains.ts',
  'chain-subchains.spec.ts',
  'mcp-fixtures.ts',
  'workflow-fixtures.ts',
  // The run's tables, its wire shape, its records and its part of retention.
  'run.entity.ts',
  'run-node.entity.ts',
  'run-definition.entity.ts',
  'run-principal.entity.ts',
  'run-snapshot.ts',
  'run-variables.ts',
  'run-variables.spec.ts',
  'run.service.ts',
  'run-retention.ts',
  // Its settings, metrics and discovery advertisement.
  'runs.settings.ts',
  'runs.metrics.ts',
  'runs.advertiser.ts',
];

/** What is out of place directly under a room: files not allowed and folders that are not sub-rooms; allowed files missing. */
export function roomProblems(entries: { name: string; dir: boolean }[], allowedFiles: string[], rooms: string[]): string[] {
  const problems: string[] = [];
  for (const e of entries) {
    if (e.dir && !rooms.includes(e.name)) problems.push(`folder ${e.name}/ is not a sub-room`);
    if (!e.dir && !allowedFiles.includes(e.name)) problems.push(`${e.name} belongs in a sub-room`);
  }
  const present = new Set(entries.filter((e) => !e.dir).map((e) => e.name));
  for (const f of allowedFiles) if (!present.has(f)) problems.push(`${f} is allowed but no longer there: remove it from the list`);
  return problems;
}

/** The files allowed to use `ModuleRef` (a list that only shrinks; empty). */
const MODULE_REF_ALLOWED: string[] = [];

/** Whether a source text uses Nest's `ModuleRef` (imported or named). */
export function usesModuleRef(text: string): boolean {
  return /\bModuleRef\b/.test(text.replace(/\/\*[\s\S]*?\*\/|\/\/[^\n]*/g, ''));
}

/** The one file that opens a tool source's sessions. */
const OPENS_SESSIONS = 'src/capabilities/tool-catalog/tool-catalog.service.ts';

/** Whether a source text calls a tool source's `openSession` (comments aside). */
export function opensSessions(text: string): boolean {
  return /\.openSession\s*\(/.test(text.replace(/\/\*[\s\S]*?\*\/|\/\/[^\n]*/g, ''));
}

function files(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? files(path.join(dir, e.name)) : e.name.endsWith('.ts') && !e.name.endsWith('.spec.ts') ? [path.join(dir, e.name)] : []));
}

describe('capability rooms', () => {
  it('runs/ holds only its allowed root files and its sub-rooms', () => {
    const entries = fs.readdirSync(RUNS, { withFileTypes: true }).map((e) => ({ name: e.name, dir: e.isDirectory() }));
    expect(roomProblems(entries, RUNS_ROOT_FILES, RUNS_ROOMS)).toEqual([]);
  });

  it('the room scan fails on a stray file, an unknown folder and a stale allowed entry (synthetic)', () => {
    const entries = [
      { name: 'index.ts', dir: false },
      { name: 'run-store.ts', dir: false },
      { name: 'engine', dir: true },
      { name: 'misc', dir: true },
    ];
    expect(roomProblems(entries, ['index.ts', 'runs.module.ts'], ['engine'])).toEqual([
      'run-store.ts belongs in a sub-room',
      'folder misc/ is not a sub-room',
      'runs.module.ts is allowed but no longer there: remove it from the list',
    ]);
  });

  it('no capability looks providers up through ModuleRef', () => {
    const found = files(CAPABILITIES)
      .filter((f) => usesModuleRef(fs.readFileSync(f, 'utf8')))
      .map((f) => path.relative(ROOT, f).split(path.sep).join('/'));
    expect(found.filter((f) => !MODULE_REF_ALLOWED.includes(f))).toEqual([]);
    expect(MODULE_REF_ALLOWED.filter((f) => !found.includes(f))).toEqual([]);
  });

  it('the ModuleRef scan fails on an import and a constructor parameter, not on a comment (synthetic)', () => {
    expect(usesModuleRef("import { ModuleRef } from '@nestjs/core';")).toBe(true);
    expect(usesModuleRef('constructor(private readonly refs: ModuleRef) {}')).toBe(true);
    expect(usesModuleRef('// no ModuleRef here\n/* nor ModuleRef */ const x = 1;')).toBe(false);
  });

  it('only the tool catalog opens a tool source\'s sessions', () => {
    const found = files(path.join(ROOT, 'src'))
      .filter((f) => opensSessions(fs.readFileSync(f, 'utf8')))
      .map((f) => path.relative(ROOT, f).split(path.sep).join('/'));
    expect(found).toEqual([OPENS_SESSIONS]);
  });

  it('the session scan fails on a call through the provider, not on a check that it exists (synthetic)', () => {
    expect(opensSessions('const s = await entry.source.provider.openSession(toolId, ctx);')).toBe(true);
    expect(opensSessions('if (!e.source.provider.openSession) continue;')).toBe(false);
    expect(opensSessions('// provider.openSession(x) in a comment')).toBe(false);
  });
});
