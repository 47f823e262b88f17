import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import { HOST_NAME } from '../../../platform/discovery/discovery.service';

/** What replaces a re-fire of every seam below in a fork (run-replay.ts and the activity ledger). */
const GUARDED_BY =
  'openwop-host replay source (run-replay.ts): a replay fork answers every node that is not deterministic with the source run’s recorded outcome and fails a deterministic node that reaches ctx.effect closed (replay_source_missing); the activity ledger (activity_invocation) performs each logical effect of a run once';

/**
 * Every outbound effect path the node runtime reaches (replay.md §The effect-seam manifest, RFC
 * 0173 §C.1). Both are tool calls: a node reaches the outside only through the tool catalog
 * (`core.tool`) or `ctx.mcp.callTool`, and a fork in `replay` mode performs neither (the source's
 * recorded outcome stands in). A `branch` fork executes its tail live, so it re-fires them by design.
 */
export const EFFECT_SEAMS = [
  {
    seam: 'mcp.tools-call',
    kind: 'http',
    guarded: true,
    guardedBy: GUARDED_BY,
    branchReFires: true,
    note: 'MCP tools/call to a configured server (streamable HTTP): core.tool on an mcp source, ctx.mcp.callTool',
  },
  {
    seam: 'tool.catalog-invoke',
    kind: 'http',
    guarded: true,
    guardedBy: GUARDED_BY,
    branchReFires: true,
    note: 'core.tool on a node-pack, connector or host-extension tool of the catalog (the tool’s own outbound calls)',
  },
] as const;

/** The host build the manifest describes: the SHA-256 of the artifact this process runs. */
function build(): { kind: 'artifact-sha256'; id: string } {
  let bytes: Buffer;
  try {
    bytes = fs.readFileSync(process.argv[1] ?? __filename);
  } catch {
    bytes = fs.readFileSync(__filename);
  }
  return { kind: 'artifact-sha256', id: createHash('sha256').update(bytes).digest('hex') };
}

/** The manifest (effect-seam-manifest.schema.json): this host's build and its seams. */
export function effectSeamManifest(): Record<string, unknown> {
  return { manifestVersion: '1', host: { name: HOST_NAME, build: build() }, seams: EFFECT_SEAMS.map((s) => ({ ...s })) };
}
