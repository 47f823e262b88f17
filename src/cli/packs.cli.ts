import * as fs from 'node:fs';
import * as path from 'node:path';
import { call, hostFetch, HostClientOptions } from './host-client';

/**
 * `openwop-host packs install|list|uninstall`: a client of a running host's HTTP API
 * (`/v1/installed-packs`), authenticated with an API key. Loads nothing of the host.
 */

interface Problem {
  path?: string;
  code?: string;
  message?: string;
}

/** The pack files a FILE or DIR argument names: the file itself, or the directory's `*.json` files (sorted; `package.json` skipped). */
export function packFiles(target: string): string[] {
  const stat = fs.statSync(target, { throwIfNoEntry: false });
  if (!stat) throw new Error(`no such file or directory: ${target}`);
  if (!stat.isDirectory()) return [target];
  const files = fs
    .readdirSync(target)
    .filter((f) => f.endsWith('.json') && f !== 'package.json' && f !== 'package-lock.json')
    .sort()
    .map((f) => path.join(target, f));
  if (!files.length) throw new Error(`no *.json pack files in ${target}`);
  return files;
}

/**
 * Installs each pack file. The file's bytes are sent as they are (the host stores them byte for
 * byte). A refused pack prints every problem the host listed (`details.problems`). Exit 0 only when
 * every file installed.
 */
export async function packsInstall(o: HostClientOptions, target: string, opts: { json?: boolean }): Promise<number> {
  let failed = 0;
  const results: unknown[] = [];
  for (const file of packFiles(target)) {
    const text = fs.readFileSync(file, 'utf8');
    try {
      JSON.parse(text);
    } catch (e) {
      o.err.write(`${file}: not JSON: ${(e as Error).message}\n`);
      failed++;
      continue;
    }
    const res = await hostFetch(o, '/v1/installed-packs', {
      method: 'POST',
      headers: { authorization: `Bearer ${o.key}`, accept: 'application/json', 'content-type': 'application/json' },
      body: text,
    });
    const body = (await res.json().catch(() => ({}))) as Record<string, unknown>;
    if (!res.ok) {
      failed++;
      o.err.write(`${file}: ${res.status} ${String(body.error ?? 'error')}: ${String(body.message ?? '')}\n`);
      const problems = ((body.details as { problems?: Problem[] } | undefined)?.problems ?? []) as Problem[];
      for (const p of problems) o.err.write(`  ${p.path || '/'}  ${p.code ?? ''}  ${p.message ?? ''}\n`);
      if (opts.json) results.push({ file, status: res.status, error: body });
      continue;
    }
    const pack = body.pack as Record<string, unknown>;
    if (opts.json) results.push({ file, ...body });
    else {
      const chains = Array.isArray(pack.chains) ? (pack.chains as Array<{ chainId: string }>).map((c) => c.chainId) : [];
      o.out.write(`${pack.id}  ${String(body.outcome).padEnd(9)} ${pack.name}${pack.version ? `@${pack.version}` : ''}${chains.length ? `  chains: ${chains.join(', ')}` : ''}\n`);
    }
  }
  if (opts.json) o.out.write(`${JSON.stringify(results, null, 2)}\n`);
  return failed ? 1 : 0;
}

export async function packsList(o: HostClientOptions, opts: { kind?: string; json?: boolean }): Promise<number> {
  const packs: Array<Record<string, unknown>> = [];
  let cursor: string | null = null;
  do {
    const q = new URLSearchParams({ limit: '500' });
    if (opts.kind) q.set('kind', opts.kind);
    if (cursor) q.set('cursor', cursor);
    const page = await call(o, 'GET', `/v1/installed-packs?${q}`);
    packs.push(...(page.packs as Array<Record<string, unknown>>));
    cursor = (page.nextCursor as string | null) ?? null;
  } while (cursor);
  if (opts.json) {
    o.out.write(`${JSON.stringify({ packs }, null, 2)}\n`);
    return 0;
  }
  for (const p of packs) {
    const chains = Array.isArray(p.chains) ? (p.chains as Array<{ chainId: string }>).map((c) => c.chainId).join(', ') : Array.isArray(p.nodeTypes) ? (p.nodeTypes as string[]).join(', ') : '';
    o.out.write(`${p.id}  ${String(p.kind).padEnd(14)} ${p.name}${p.version ? `@${p.version}` : ''}${p.workspace ? `  (workspace ${p.workspace})` : ''}  ${chains}\n`);
  }
  return 0;
}

export async function packsUninstall(o: HostClientOptions, id: string): Promise<number> {
  const p = await call(o, 'DELETE', `/v1/installed-packs/${encodeURIComponent(id)}`);
  o.out.write(`${p.id}  uninstalled ${p.name}${p.version ? `@${p.version}` : ''}\n`);
  return 0;
}
