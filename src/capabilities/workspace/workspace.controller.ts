import { Body, Controller, createParamDecorator, Delete, ExecutionContext, Get, Headers, HttpCode, Put, Query, Res } from '@nestjs/common';
import { ApiBody, ApiHeader, ApiNoContentResponse, ApiOkResponse, ApiOperation, ApiParam, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { DomainError } from '../../platform/errors/domain-error';
import { MAX_PARAM_LENGTH } from '../../platform/http/framework-errors';
import { CurrentPrincipal, Scopes } from '../../platform/identity/decorators';
import type { Principal } from '../../platform/identity/principal';
import { ApiErrors } from '../../platform/openapi/api-errors.decorator';
import { protocolSchemaRef } from '../../platform/openapi/protocol-schemas';
import { PutWorkspaceFileBody, WorkspaceListQuery, WorkspaceReadQuery } from './workspace.dto';
import { IF_MATCH_HEADER, IF_NONE_MATCH_HEADER, PATH_PARAM, WORKSPACE_FILE_LIST } from './workspace.openapi';
import { workspacePath } from './workspace-path';
import { WorkspaceFileMeta, WorkspaceFileView, WorkspaceService } from './workspace.service';

/**
 * The file path of a `/v1/host/workspace/files/*` request: the rest of the URL, percent-decoded
 * (so `notes/a.md` and `notes%2Fa.md` name the same file), then held to the namespace's rules.
 */
const FilePath = createParamDecorator((_: unknown, ctx: ExecutionContext): string => {
  const raw = ctx.switchToHttp().getRequest<FastifyRequest<{ Params: Record<string, string> }>>().params['*'];
  // The router's parameter limit does not hold for a wildcard: applied here, with the answer it gives every other route.
  if (typeof raw === 'string' && raw.length > MAX_PARAM_LENGTH) throw new DomainError('uri_too_long', 414, 'A path parameter exceeds the host limit.');
  return workspacePath(raw);
});

const NOT_SERVED = { status: 501, description: 'capability_not_provided: the store is switched off (OPENWOP_WORKSPACE=false) and workspace is not advertised.', schema: protocolSchemaRef('ErrorEnvelope') };

/** The agent workspace (RFC 0059 §C): list, read, write (optimistically) and delete the caller's files. */
@ApiTags('workspace')
@Controller()
export class WorkspaceController {
  constructor(private readonly workspace: WorkspaceService) {}

  @Scopes('workspace:read')
  @Get('/v1/host/workspace/files')
  @ApiOperation({ operationId: 'listWorkspaceFiles', summary: "List the caller's workspace files, metadata only, in path order", description: 'The files of the caller\'s tenant·workspace (never another\'s). Without `limit` the whole store is one page (it holds at most `workspace.maxFiles`); with it, pages of `limit` joined by `nextCursor`.' })
  @ApiOkResponse({ schema: WORKSPACE_FILE_LIST })
  @ApiErrors(400, 401, 403)
  @ApiResponse(NOT_SERVED)
  async list(@CurrentPrincipal() p: Principal, @Query() q: WorkspaceListQuery): Promise<{ files: WorkspaceFileMeta[]; nextCursor: string | null }> {
    const page = await this.workspace.list(p, q);
    return { files: page.items, nextCursor: page.nextCursor };
  }

  @Scopes('workspace:read')
  @Get('/v1/host/workspace/files/*')
  @ApiOperation({ operationId: 'getWorkspaceFile', summary: 'Read a workspace file (its current version, or a retained one with ?version=N); 404 not_found', description: 'Answers the WorkspaceFile with its etag (also in the ETag header). A file of another tenant or workspace, a deleted file and a pruned version answer 404 not_found alike.' })
  @ApiParam(PATH_PARAM)
  @ApiOkResponse({ schema: protocolSchemaRef('WorkspaceFile') })
  @ApiErrors(400, 401, 403, 404)
  @ApiResponse(NOT_SERVED)
  async read(@CurrentPrincipal() p: Principal, @FilePath() path: string, @Query() q: WorkspaceReadQuery, @Res({ passthrough: true }) reply: FastifyReply): Promise<WorkspaceFileView> {
    const file = await this.workspace.read(p, path, q.version);
    void reply.header('etag', file.etag);
    return file;
  }

  @Scopes('workspace:write')
  @Put('/v1/host/workspace/files/*')
  @HttpCode(200)
  @ApiOperation({
    operationId: 'putWorkspaceFile',
    summary: 'Create or replace a workspace file atomically; each write is a new version',
    description:
      'If-Match makes it conditional: a stale etag is 409 workspace_conflict (details.currentVersion). Content over workspace.maxFileBytes, or a new file past workspace.maxFiles, is 413 workspace_too_large. Emits workspace.updated {path, version} on the tenant\'s host event stream and writes an audit entry.',
  })
  @ApiParam(PATH_PARAM)
  @ApiHeader(IF_MATCH_HEADER)
  @ApiHeader(IF_NONE_MATCH_HEADER)
  @ApiBody({ type: PutWorkspaceFileBody })
  @ApiOkResponse({ schema: protocolSchemaRef('WorkspaceFile') })
  @ApiErrors(400, 401, 403, 409, 413)
  @ApiResponse(NOT_SERVED)
  async put(
    @CurrentPrincipal() p: Principal,
    @FilePath() path: string,
    @Body() body: PutWorkspaceFileBody,
    @Headers('if-match') ifMatch: string | undefined,
    @Headers('if-none-match') ifNoneMatch: string | undefined,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<WorkspaceFileView> {
    const file = await this.workspace.write(p, path, body, { ifMatch, ifNoneMatch });
    void reply.header('etag', file.etag);
    return file;
  }

  @Scopes('workspace:write')
  @Delete('/v1/host/workspace/files/*')
  @HttpCode(204)
  @ApiOperation({ operationId: 'deleteWorkspaceFile', summary: 'Delete a workspace file (a tombstone version); 404 not_found', description: 'If-Match makes it conditional (409 workspace_conflict when stale). Emits workspace.updated with the tombstone version.' })
  @ApiParam(PATH_PARAM)
  @ApiHeader(IF_MATCH_HEADER)
  @ApiNoContentResponse({ description: 'Deleted.' })
  @ApiErrors(400, 401, 403, 404, 409)
  @ApiResponse(NOT_SERVED)
  async remove(@CurrentPrincipal() p: Principal, @FilePath() path: string, @Headers('if-match') ifMatch: string | undefined): Promise<void> {
    await this.workspace.remove(p, path, { ifMatch });
  }
}
