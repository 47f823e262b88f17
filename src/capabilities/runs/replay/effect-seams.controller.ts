import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import { Controller, Get } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { HOST_NAME } from '../../../platform/discovery/discovery.service';
import { Scopes } from '../../../platform/identity/decorators';
import { ApiErrors } from '../../../platform/openapi/api-errors.decorator';

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

const MANIFEST_SCHEMA = {
  type: 'object',
  required: ['manifestVersion', 'host', 'seams'],
  properties: {
    manifestVersion: { type: 'string', enum: ['1'] },
    host: { type: 'object', properties: { name: { type: 'string' }, build: { type: 'object', properties: { kind: { type: 'string' }, id: { type: 'string' } } } } },
    seams: {
      type: 'array',
      items: {
        type: 'object',
        required: ['seam', 'kind', 'guarded', 'guardedBy'],
        properties: { seam: { type: 'string' }, kind: { type: 'string' }, guarded: { type: 'boolean' }, guardedBy: { type: 'string' }, branchReFires: { type: 'boolean' }, note: { type: 'string' } },
      },
    },
  },
};

/**
 * `GET /v1/host/effect-seams` (`GET /host/effect-seams` under major 2, where the `replay` record
 * names it): the effect-seam manifest, the same at both majors.
 */
@ApiTags('runs')
@Controller()
export class EffectSeamsController {
  private manifest?: Record<string, unknown>;

  @Scopes('runs:read')
  @Get('/v1/host/effect-seams')
  @ApiOperation({ operationId: 'getEffectSeamManifest', summary: 'The effect-seam manifest: every outbound effect path the node runtime reaches and what keeps a replay fork from re-firing it' })
  @ApiOkResponse({ schema: MANIFEST_SCHEMA })
  @ApiErrors(401, 403)
  get(): Record<string, unknown> {
    this.manifest ??= { manifestVersion: '1', host: { name: HOST_NAME, build: build() }, seams: EFFECT_SEAMS.map((s) => ({ ...s })) };
    return this.manifest;
  }
}
