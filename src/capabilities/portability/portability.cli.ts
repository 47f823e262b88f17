import * as fs from 'node:fs';
import type { Writable } from 'node:stream';
import type { INestApplicationContext } from '@nestjs/common';
import { SingleBar } from 'cli-progress';
import { DomainError } from '../../platform/errors/domain-error';
import { systemPrincipal } from '../../platform/identity/principal';
import { expandRoles } from '../../platform/identity/scopes';
import { EXPORT_SCOPE, IMPORT_SCOPE, ImportProgress, ImportResult, PortabilityService } from './portability.service';
import type { ImportPlan } from './import-plan';

/**
 * `openwop-host export` / `openwop-host import`: the same service the HTTP routes use, run with a
 * booted application context by an operator who holds the database (so the CLI acts as the
 * tenant's `system` principal, or `--principal`, with both portability scopes).
 */

export interface CliIo {
  out: Writable;
  err: Writable;
  /** Draw a progress bar (default: when stderr is a TTY). */
  progress?: boolean;
}

export interface ExportCommandOptions {
  tenant: string;
  workspace?: string;
  principal?: string;
  /** Kinds to export (comma-separated strings are split). */
  kinds?: string[] | string;
  /** Write the bundle to this file instead of stdout. */
  out?: string;
}

export interface ImportCommandOptions {
  tenant: string;
  workspace?: string;
  principal?: string;
  dryRun?: boolean;
  /** Print the full plan/result JSON instead of the summary. */
  json?: boolean;
}

/** Items from which the import draws a progress bar. */
const PROGRESS_MIN_ITEMS = 200;

/**
 * The operator at the console holds the tenant's every scope (it has the database anyway), so an
 * import needs nothing more; it has no API key, so what the import sets up to act later (schedules)
 * is delegated to nobody and acts with no scopes until a principal installs it again.
 */
function principalFor(opts: { tenant: string; workspace?: string; principal?: string }) {
  const p = systemPrincipal(opts.tenant, opts.workspace, [...new Set([EXPORT_SCOPE, IMPORT_SCOPE, ...expandRoles(['admin'])])]);
  return opts.principal ? { ...p, principal: opts.principal } : p;
}

function defaultIo(): CliIo {
  return { out: process.stdout, err: process.stderr, progress: process.stderr.isTTY === true };
}

/** Writes the tenant's bundle as JSON (stdout or `--out`). Returns the process exit code. */
export async function exportCommand(app: INestApplicationContext, opts: ExportCommandOptions, io: CliIo = defaultIo()): Promise<number> {
  const kinds = (Array.isArray(opts.kinds) ? opts.kinds : opts.kinds ? [opts.kinds] : []).flatMap((k) => k.split(',')).map((k) => k.trim()).filter(Boolean);
  return reportErrors(io, async () => {
    const bundle = await app.get(PortabilityService).exportBundle(principalFor(opts), kinds.length ? kinds : undefined);
    const text = `${JSON.stringify(bundle, null, 2)}\n`;
    if (opts.out) fs.writeFileSync(opts.out, text);
    else io.out.write(text);
    io.err.write(`exported ${bundle.items.length} item(s) of tenant ${opts.tenant}${opts.out ? ` to ${opts.out}` : ''}\n`);
    return 0;
  });
}

/**
 * Plans (`--dry-run`) or applies a bundle file (`-` reads stdin). Exit codes: 0 done, 1 refused,
 * 2 the plan has conflicts (a dry run that an apply would refuse).
 */
export async function importCommand(app: INestApplicationContext, file: string, opts: ImportCommandOptions, io: CliIo = defaultIo()): Promise<number> {
  return reportErrors(io, async () => {
    let body: unknown;
    try {
      body = JSON.parse(file === '-' ? fs.readFileSync(0, 'utf8') : fs.readFileSync(file, 'utf8'));
    } catch (e) {
      io.err.write(`error: cannot read a JSON bundle from ${file === '-' ? 'stdin' : file}: ${(e as Error).message}\n`);
      return 1;
    }
    const items = itemCount(body);
    const bar = (io.progress ?? false) && items >= PROGRESS_MIN_ITEMS ? new SingleBar({ stream: io.err, format: '{phase} [{bar}] {value}/{total}', hideCursor: true, noTTYOutput: true, notTTYSchedule: 2000 }) : undefined;
    let phase: ImportProgress['phase'] | undefined;
    const onProgress = (p: ImportProgress) => {
      if (!bar) return;
      if (p.phase !== phase) {
        if (phase) bar.stop();
        phase = p.phase;
        bar.start(p.total, 0, { phase: p.phase === 'plan' ? 'checking' : 'applying' });
      }
      bar.update(p.done);
    };
    const service = app.get(PortabilityService);
    let answer: ImportPlan | ImportResult;
    try {
      answer = await service.importBundle(principalFor(opts), body, { dryRun: opts.dryRun === true, onProgress });
    } finally {
      bar?.stop();
    }
    if (opts.json) io.out.write(`${JSON.stringify(answer, null, 2)}\n`);
    else io.out.write(summary(answer));
    return answer.dryRun && answer.conflicts.length ? 2 : 0;
  });
}

function summary(a: ImportPlan | ImportResult): string {
  const lines: string[] = [];
  if (a.dryRun) {
    lines.push(`dry run (nothing written): ${a.counts.create} to create, ${a.counts.update} to update, ${a.counts.skip} to skip, ${a.counts.conflict} conflict(s)`);
    for (const c of a.conflicts) lines.push(`  conflict ${c.kind} ${c.ref}: ${c.reason}`);
  } else {
    lines.push(`imported: ${a.counts.created} created, ${a.counts.updated} updated, ${a.counts.skipped} skipped`);
  }
  if (a.secretsToRebind.length) lines.push(`credentials to bind again: ${a.secretsToRebind.join(', ')}`);
  return `${lines.join('\n')}\n`;
}

function itemCount(body: unknown): number {
  const b = body && typeof body === 'object' && 'bundle' in body ? (body as { bundle: unknown }).bundle : body;
  const items = b && typeof b === 'object' ? (b as { items?: unknown }).items : undefined;
  return Array.isArray(items) ? items.length : 0;
}

/** Domain refusals become one line on stderr and exit code 1 (details name items and paths, never values). */
async function reportErrors(io: CliIo, fn: () => Promise<number>): Promise<number> {
  try {
    return await fn();
  } catch (e) {
    if (!(e instanceof DomainError)) throw e;
    io.err.write(`error: ${e.code}: ${e.message}\n`);
    if (e.details) io.err.write(`${JSON.stringify(e.details, null, 2)}\n`);
    return 1;
  }
}
