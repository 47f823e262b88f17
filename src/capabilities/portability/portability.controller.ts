import { applyDecorators, Body, Controller, Get, HttpCode, Post, Query, SetMetadata } from '@nestjs/common';
import { ApiBody, ApiExtension, ApiOkResponse, ApiOperation, ApiQuery, ApiTags } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { ArrayMaxSize, IsIn, IsOptional, Matches } from '../../platform/http/dto-validation';
import { CurrentPrincipal, Scopes } from '../../platform/identity/decorators';
import type { Principal } from '../../platform/identity/principal';
import { ApiErrors } from '../../platform/openapi/api-errors.decorator';
import { protocolSchemaRef } from '../../platform/openapi/protocol-schemas';
import type { ExportBundle } from './bundle-checks';
import { EXPORT_SCOPE, IMPORT_SCOPE, ImportResult, PortabilityService } from './portability.service';
import type { ImportPlan } from './import-plan';
import { IMPORT_PLAN_SCHEMA, IMPORT_REQUEST_SCHEMA, IMPORT_RESULT_SCHEMA } from './portability.openapi';
import { SeamAlias } from '../../platform/seams/seam-alias';

const DEFERRED_SCOPES_KEY = 'openwop:deferred-scopes';

/**
 * A route that authenticates every caller but checks its scope in the service, after the bundle
 * checks: RFC 0098 orders shape → credential scan → dependsOn → scope, so a leaky bundle is refused
 * with 422 whoever sends it. The deferred scopes are in the route metadata and in the OpenAPI
 * document (`x-deferred-scopes`), so who can reach what stays reviewable.
 */
function DeferredScopes(...scopes: string[]) {
  return applyDecorators(Scopes(), SetMetadata(DEFERRED_SCOPES_KEY, scopes), ApiExtension('x-deferred-scopes', scopes));
}

class ExportQuery {
  /** Comma-separated bundle item kinds (repeating the parameter works too); unknown kinds are ignored. */
  @IsOptional()
  @Transform(({ value }) =>
    (Array.isArray(value) ? value : [value])
      .flatMap((v: unknown) => String(v).split(','))
      .map((s: string) => s.trim())
      .filter(Boolean),
  )
  @ArrayMaxSize(20)
  @Matches(/^[a-z][a-z0-9-]{0,63}$/, { each: true, message: 'each kind must be a lower-case kind name' })
  kinds?: string[];
}

class ImportQuery {
  /** `true` (or `1`): plan only, write nothing. */
  @IsOptional()
  @IsIn(['true', 'false', '1', '0'])
  dryRun?: string;
}

const KINDS_QUERY = { name: 'kinds', required: false, description: 'Comma-separated bundle item kinds to export (default: every kind the host exports).', schema: { type: 'string' } } as const;
const DRY_RUN_QUERY = { name: 'dryRun', required: false, description: '`true`: return the plan and write nothing.', schema: { type: 'string', enum: ['true', 'false', '1', '0'] } } as const;

@ApiTags('portability')
@Controller()
export class PortabilityController {
  constructor(private readonly portability: PortabilityService) {}

  @DeferredScopes(EXPORT_SCOPE)
  @Get('/v1/export')
  @ApiOperation({ operationId: 'exportBundle', summary: `Export the caller's estate as a secret-free bundle (requires ${EXPORT_SCOPE})` })
  @ApiQuery(KINDS_QUERY)
  @ApiOkResponse({ schema: protocolSchemaRef('ExportBundle') })
  @ApiErrors(400, 401, 403, 422)
  @SeamAlias({ path: '/v1/host/sample/export', operationId: 'sampleExportBundle', summary: 'Conformance seam of GET /v1/export', seamTag: false })
  export(@CurrentPrincipal() p: Principal, @Query() q: ExportQuery): Promise<ExportBundle> {
    return this.portability.exportBundle(p, q.kinds);
  }

  @DeferredScopes(IMPORT_SCOPE)
  @Post('/v1/import')
  @HttpCode(200)
  @ApiOperation({
    operationId: 'importBundle',
    summary: `Plan (dryRun=true) or apply a bundle import, all or nothing (requires ${IMPORT_SCOPE}, checked after the bundle checks)`,
  })
  @ApiQuery(DRY_RUN_QUERY)
  @ApiBody({ schema: IMPORT_REQUEST_SCHEMA })
  @ApiOkResponse({ description: 'An ImportPlan (dry run) or an ImportResult (apply).', schema: { oneOf: [IMPORT_PLAN_SCHEMA, IMPORT_RESULT_SCHEMA] } })
  @ApiErrors(400, 401, 403, 413, 415, 422)
  @SeamAlias({ path: '/v1/host/sample/import', operationId: 'sampleImportBundle', summary: 'Conformance seam of POST /v1/import', seamTag: false })
  import(@CurrentPrincipal() p: Principal, @Query() q: ImportQuery, @Body() body: unknown): Promise<ImportPlan | ImportResult> {
    return this.portability.importBundle(p, body, { dryRun: isDryRun(q) });
  }

}

function isDryRun(q: ImportQuery): boolean {
  return q.dryRun === 'true' || q.dryRun === '1';
}
