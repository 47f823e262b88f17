import { Body, Controller, Delete, Get, Param, Post, Query, Req, Res } from '@nestjs/common';
import { ApiBody, ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiParam, ApiPropertyOptional, ApiTags } from '@nestjs/swagger';
import { IsIn, IsOptional } from '../../../platform/http/dto-validation';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ValidationError } from '../../../platform/errors/domain-error';
import { submittedText } from '../../../platform/http/json-text';
import { rawBodyText } from '../../../platform/http/verbatim-json.interceptor';
import { CurrentPrincipal, Scopes } from '../../../platform/identity/decorators';
import type { Principal } from '../../../platform/identity/principal';
import { ApiErrors } from '../../../platform/openapi/api-errors.decorator';
import { arrayPage } from '../../../platform/pagination/keyset';
import { pageSchema, PageQuery } from '../../../platform/pagination/page-query';
import { InstalledPacksService, InstalledPackView, PackKind } from './installed-packs.service';

const PUBLISH_SCOPE = 'packs:publish';
/** Installed packs are what the tool catalog projects (workflow-chain packs as `workflow:` tools): reading them is reading the catalog. */
const READ_SCOPE = 'tools:read';

const ID_PARAM = { name: 'id', description: 'The installed pack id (from the install answer or the list).' };

const INSTALLED_PACK_VIEW = {
  type: 'object',
  required: ['id', 'kind', 'name', 'ref', 'origin', 'installedBy', 'installedAt', 'updatedAt'],
  properties: {
    id: { type: 'string', format: 'uuid' },
    kind: { type: 'string', enum: ['workflow-chain', 'node'] },
    name: { type: 'string' },
    version: { type: 'string' },
    ref: { type: 'string', description: 'sha256:<hex> of the installed bytes (the manifest JSON text as submitted).' },
    workspace: { type: 'string', description: 'The workspace the pack belongs to; absent: the whole tenant.' },
    origin: { type: 'string', description: '`api` (installed directly), `proposal:<id>` or `import`.' },
    installedBy: { type: 'string' },
    installedAt: { type: 'string', format: 'date-time' },
    updatedAt: { type: 'string', format: 'date-time' },
    chains: {
      type: 'array',
      description: "A workflow-chain pack's chains: POST /v1/runs starts one by its chainId.",
      items: { type: 'object', required: ['chainId'], properties: { chainId: { type: 'string' }, version: { type: 'string' }, label: { type: 'string' } } },
    },
    nodeTypes: { type: 'array', items: { type: 'string' }, description: "A node pack's node types." },
  },
};

const INSTALL_ANSWER = {
  type: 'object',
  required: ['outcome', 'pack'],
  properties: { outcome: { type: 'string', enum: ['created', 'updated', 'unchanged'] }, pack: INSTALLED_PACK_VIEW },
};

class InstalledPackQuery extends PageQuery {
  @ApiPropertyOptional({ enum: ['workflow-chain', 'node'], description: 'Only packs of this kind.' })
  @IsOptional()
  @IsIn(['workflow-chain', 'node'])
  kind?: PackKind;
}

/** Direct pack installs into the caller's tenant (or its workspace): install, list, read, uninstall. */
@ApiTags('packs')
@Controller()
export class InstalledPacksController {
  constructor(private readonly packs: InstalledPacksService) {}

  @Scopes(PUBLISH_SCOPE)
  @Post('/v1/installed-packs')
  @ApiOperation({
    operationId: 'installPack',
    summary: 'Install a workflow-chain pack or a node pack',
    description:
      'The body is the pack manifest. It is installed into the credential\'s workspace (else the tenant), byte for byte, after every check: ' +
      'the manifest schema, node types no executor serves, tools missing from the tool catalog of the tenant, edges naming unknown nodes, cycles and ' +
      'templates the engine cannot fill. Any problem: 422 `pack_invalid` with `details.problems: [{path, code, message}]` listing every one, and nothing is installed. ' +
      '201 when created, 200 when updated or unchanged (the same bytes again).',
  })
  @ApiBody({ schema: { type: 'object', description: 'A workflow-chain-pack-manifest (`kind: "workflow-chain"`) or a node-pack-manifest.' } })
  @ApiCreatedResponse({ schema: INSTALL_ANSWER })
  @ApiOkResponse({ schema: INSTALL_ANSWER })
  @ApiErrors(400, 401, 403, 413, 422)
  async install(@CurrentPrincipal() p: Principal, @Body() body: unknown, @Req() req: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply) {
    if (!body || typeof body !== 'object' || Array.isArray(body)) throw new ValidationError('The body must be a pack manifest (a JSON object).');
    const raw = rawBodyText(req);
    const result = await this.packs.install(p, body as Record<string, unknown>, raw === undefined ? undefined : submittedText(raw, undefined, body));
    reply.status(result.outcome === 'created' ? 201 : 200);
    return result;
  }

  @Scopes(READ_SCOPE)
  @Get('/v1/installed-packs')
  @ApiOperation({ operationId: 'listInstalledPacks', summary: "List the packs installed for the caller's tenant and workspace (by kind, then name)" })
  @ApiOkResponse({ schema: pageSchema('packs', INSTALLED_PACK_VIEW) })
  @ApiErrors(400, 401, 403)
  async list(@CurrentPrincipal() p: Principal, @Query() q: InstalledPackQuery): Promise<{ packs: InstalledPackView[]; nextCursor: string | null }> {
    const all = await this.packs.list(p, q.kind);
    const page = arrayPage(all, (pack) => `${pack.kind} ${pack.name} ${pack.workspace ?? ''}`, q, { list: `installed-packs:${q.kind ?? ''}`, tenant: p.tenant, workspace: p.workspace });
    return { packs: page.items, nextCursor: page.nextCursor };
  }

  @Scopes(READ_SCOPE)
  @Get('/v1/installed-packs/:id')
  @ApiOperation({ operationId: 'getInstalledPack', summary: 'Read one installed pack' })
  @ApiParam(ID_PARAM)
  @ApiOkResponse({ schema: INSTALLED_PACK_VIEW })
  @ApiErrors(401, 403, 404)
  get(@CurrentPrincipal() p: Principal, @Param('id') id: string): Promise<InstalledPackView> {
    return this.packs.get(p, id);
  }

  @Scopes(PUBLISH_SCOPE)
  @Delete('/v1/installed-packs/:id')
  @ApiOperation({
    operationId: 'uninstallPack',
    summary: 'Uninstall a pack (answers what was removed)',
    description: 'Runs already started keep the chain they were created with; new runs of its chains are 404. A workspace credential removes only its workspace\'s packs (a tenant-wide pack: 403).',
  })
  @ApiParam(ID_PARAM)
  @ApiOkResponse({ schema: INSTALLED_PACK_VIEW })
  @ApiErrors(401, 403, 404)
  uninstall(@CurrentPrincipal() p: Principal, @Param('id') id: string): Promise<InstalledPackView> {
    return this.packs.uninstall(p, id);
  }
}
