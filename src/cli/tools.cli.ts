import * as fs from 'node:fs';
import type { operations } from '../../generated/openapi';
import { call, HostClientOptions } from './host-client';

/**
 * `openwop-host tools policy [show]|set --file F`: a client of a running host's HTTP API
 * (`/v1/tools/dispatch-policy`, `tools:manage`, a tenant-level API key). Loads nothing of the host.
 */

/** The tenant's governed dispatch policy as the host answers it. */
type PolicyView = operations['getToolDispatchPolicy']['responses'][200]['content']['application/json'];

function print(o: HostClientOptions, p: PolicyView, json?: boolean): void {
  if (json) {
    o.out.write(`${JSON.stringify(p, null, 2)}\n`);
    return;
  }
  const from = p.source === 'default' ? 'nothing configured: every call allowed, nothing recorded' : p.source === 'config' ? 'the host config (tools.dispatchPolicy)' : `the tenant's override, by ${p.updatedBy} at ${p.updatedAt}`;
  o.out.write(`revision ${p.revision} (${from})\n`);
  for (const [tier, decision] of Object.entries(p.tiers)) o.out.write(`tier  ${tier.padEnd(6)} ${decision}\n`);
  for (const [tool, decision] of Object.entries(p.tools).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) o.out.write(`tool  ${tool}  ${decision}\n`);
}

export async function toolsPolicyShow(o: HostClientOptions, opts: { json?: boolean }): Promise<number> {
  print(o, (await call(o, 'GET', '/v1/tools/dispatch-policy')) as unknown as PolicyView, opts.json);
  return 0;
}

/**
 * Replaces the tenant's override with the policy in a JSON file (`{"tiers": {...}, "tools": {...}}`,
 * "-" for stdin). `--revision N` refuses the change when the policy is no longer at revision N.
 */
export async function toolsPolicySet(o: HostClientOptions, opts: { file: string; revision?: string; json?: boolean }): Promise<number> {
  let text: string;
  try {
    text = fs.readFileSync(opts.file === '-' ? 0 : opts.file, 'utf8');
  } catch (e) {
    o.err.write(`cannot read ${opts.file}: ${(e as Error).message}\n`);
    return 1;
  }
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (e) {
    o.err.write(`${opts.file} is not JSON: ${(e as Error).message}\n`);
    return 1;
  }
  if (!doc || typeof doc !== 'object' || Array.isArray(doc)) {
    o.err.write(`${opts.file} must hold a JSON object: {"tiers": {...}, "tools": {...}}\n`);
    return 1;
  }
  const body: Record<string, unknown> = { ...(doc as Record<string, unknown>) };
  if (opts.revision !== undefined) {
    const n = Number(opts.revision);
    if (!Number.isInteger(n) || n < 0) {
      o.err.write('--revision must be a whole number\n');
      return 1;
    }
    body.expectedRevision = n;
  }
  print(o, (await call(o, 'PUT', '/v1/tools/dispatch-policy', body)) as unknown as PolicyView, opts.json);
  return 0;
}
