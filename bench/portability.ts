/**
 * Portability benchmark: dry-run and apply of a 10,000-item bundle (prompt templates, through the
 * real artifact installer and pack registry), against a baseline measured in the same run: one
 * batched raw-SQL insert of the same registry rows (same bytes and refs), interleaved in rounds
 * (BENCH_ROUNDS, default 3). Prints median times and ratios; it is a measurement, not a timed test.
 *
 *   node -r @swc-node/register bench/portability.ts [items]
 *
 * Uses DATABASE_URL (default postgres://postgres@127.0.0.1:5432/postgres) to create and drop a
 * scratch database.
 */
import 'reflect-metadata';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Writable } from 'node:stream';
import { createHost } from '../src/bootstrap';
import { PortabilityService } from '../src/capabilities/portability/portability.service';
import { artifactText, textRef } from '../src/platform/artifacts/artifact-registry.service';
import { loadHostConfig } from '../src/platform/config/host-config';
import { systemPrincipal } from '../src/platform/identity/principal';
import { createBenchDatabase } from './harness';

// An import acts with the scopes of what it installs (prompt templates: packs:publish), as a real importer would need.
const SCOPES = ['portability:export', 'portability:import', 'packs:publish'];

function template(i: number): Record<string, unknown> {
  return { templateId: `bench.template-${i}`, version: '1.0.0', kind: 'system', text: `You are assistant number ${i}. Answer briefly.`, tags: ['bench'] };
}


async function timed<T>(fn: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const start = process.hrtime.bigint();
  const value = await fn();
  return { ms: Number(process.hrtime.bigint() - start) / 1e6, value };
}

export async function main(count = Number(process.argv[2] ?? 10_000)): Promise<void> {
  const bench = await createBenchDatabase('bench_port');
  const url = bench.url;
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'openwop-bench-'));
  const config = loadHostConfig({
    ...process.env,
    DATABASE_URL: url.toString(),
    LOG_LEVEL: 'warn',
    OPENWOP_BOOTSTRAP_KEY: 'false',
    OPENWOP_SCHEDULER_ENABLED: 'false',
    OPENWOP_DATA_DIR: dataDir,
  });
  const quiet = new Writable({ write: (_c, _e, cb) => cb() });
  const host = await createHost(config, { logDestination: quiet, openApi: false });
  try {
    const service = host.app.get(PortabilityService);
    if (!service.kinds().includes('prompt-template')) throw new Error('the prompt-template installer is not mounted');
    const bundle = {
      bundleVersion: '1',
      source: { origin: 'bench:portability' },
      items: Array.from({ length: count }, (_, i) => ({ kind: 'prompt-template', ref: `tpl-${i}`, payload: template(i) })),
    };
    if (count > service.maxItems) throw new Error(`portability.maxItems (${service.maxItems}) is below ${count}`);

    // Baseline: the same registry rows in batched multi-row INSERTs, one transaction.
    const rawInsert = (tenant: string, n: number) =>
      host.dataSource.transaction(async (m) => {
        const batch = 1000;
        for (let start = 0; start < n; start += batch) {
          const values: unknown[] = [];
          const rows: string[] = [];
          for (let i = start; i < Math.min(n, start + batch); i++) {
            const content = template(i);
            const bytes = artifactText(content);
            const p = values.length;
            rows.push(`($${p + 1},'','prompt-template',$${p + 2},'1.0.0',$${p + 3},$${p + 4},$${p + 5}::jsonb,'import','bench')`);
            values.push(tenant, content.templateId, textRef(bytes), bytes, bytes);
          }
          await m.query(
            `INSERT INTO "installed_artifact" ("tenant","workspace_key","kind","name","version","ref","bytes","content","origin","installed_by") VALUES ${rows.join(',')}`,
            values,
          );
        }
      });
    // Warm-up of both sides (JIT, connections, statement caches) in other tenants, so neither the
    // baseline nor the host pays a cold start inside its measurement.
    const warm = Math.min(count, 1000);
    await rawInsert('bench-warm-raw', warm);
    const warmBundle = { ...bundle, items: bundle.items.slice(0, warm) };
    await service.importBundle(systemPrincipal('bench-warm', undefined, SCOPES), warmBundle, { dryRun: true });
    await service.importBundle(systemPrincipal('bench-warm', undefined, SCOPES), warmBundle, { dryRun: false });

    // Rounds interleave the baseline and the host phases (each round in fresh tenants), so drift in
    // the machine's load hits both; the ratios are computed per round and their median is reported.
    const rounds = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 3));
    const phases = ['baseline', 'dryRun', 'apply', 'reapply', 'export'] as const;
    const ms: Record<(typeof phases)[number], number[]> = { baseline: [], dryRun: [], apply: [], reapply: [], export: [] };
    for (let r = 0; r < rounds; r++) {
      ms.baseline.push((await timed(() => rawInsert(`bench-raw-${r}`, count))).ms);
      const principal = systemPrincipal(`bench-import-${r}`, undefined, SCOPES);
      ms.dryRun.push((await timed(() => service.importBundle(principal, bundle, { dryRun: true }))).ms);
      const apply = await timed(() => service.importBundle(principal, bundle, { dryRun: false }));
      ms.apply.push(apply.ms);
      const reapply = await timed(() => service.importBundle(principal, bundle, { dryRun: false }));
      ms.reapply.push(reapply.ms);
      const exported = await timed(() => service.exportBundle(principal));
      ms.export.push(exported.ms);
      if (apply.value.counts.created !== count || reapply.value.counts.skipped !== count || exported.value.items.length !== count) {
        throw new Error('the benchmark did not import what it should have');
      }
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    const ratios = (phase: (typeof phases)[number]) => ms[phase].map((v, r) => v / ms.baseline[r]);

    const rows = [
      ['baseline: batched raw-SQL insert', 'baseline'],
      ['dry-run (plan, no writes)', 'dryRun'],
      ['apply (create all)', 'apply'],
      ['re-apply (all skipped)', 'reapply'],
      ['export', 'export'],
    ] as const;
    process.stdout.write(`portability benchmark: ${count} prompt-template items, ${rounds} round(s), medians (node ${process.version})\n`);
    for (const [name, phase] of rows) {
      const m = median(ms[phase]);
      process.stdout.write(
        `  ${name.padEnd(36)} ${m.toFixed(0).padStart(8)} ms  ${median(ratios(phase)).toFixed(2).padStart(6)}× baseline  ${((count / m) * 1000).toFixed(0).padStart(7)} items/s   rounds: ${ratios(phase).map((x) => `${x.toFixed(2)}×`).join(' ')}\n`,
      );
    }
    // The acceptance ratios, against the baseline of the same rounds.
    const applyRatio = median(ratios('apply'));
    const dryRunRatio = median(ratios('dryRun'));
    process.stdout.write(`  apply / raw batched insert = ${applyRatio.toFixed(2)}× (target <= 3×): ${applyRatio <= 3 ? 'met' : 'NOT met'}\n`);
    process.stdout.write(`  dry-run / raw batched insert = ${dryRunRatio.toFixed(2)}× (target <= 1×): ${dryRunRatio <= 1 ? 'met' : 'NOT met'}\n`);
  } finally {
    await host.close();
    await bench.drop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

if (require.main === module) {
  main().catch((e) => {
    process.stderr.write(`${(e as Error).stack ?? e}\n`);
    process.exitCode = 1;
  });
}
