import { Controller, Get, Param, Query, UseInterceptors } from '@nestjs/common';
import { VerbatimJsonInterceptor } from '../../platform/http/verbatim-json.interceptor';
import { ApiOkResponse, ApiOperation, ApiParam, ApiPropertyOptional, ApiTags } from '@nestjs/swagger';
import { IsOptional, IsString, Matches } from '../../platform/http/dto-validation';
import { CurrentPrincipal, Scopes } from '../../platform/identity/decorators';
import type { Principal } from '../../platform/identity/principal';
import { ApiErrors } from '../../platform/openapi/api-errors.decorator';
import { arrayPage } from '../../platform/pagination/keyset';
import { NEXT_CURSOR_PROPERTY, PageQuery } from '../../platform/pagination/page-query';
import { AUTOMATION_LIST_SCHEMA, PROMPT_TEMPLATE_ENTRY_SCHEMA } from './proposals.schemas';
import { AutomationRunnerService, AutomationView } from './automations/automation-runner.service';
import { PromptTemplatesService, ResolvedPromptTemplate } from './prompt-templates/prompt-templates.service';

class PromptTemplateQuery {
  @ApiPropertyOptional({ description: 'Resolve only this exact version (404 otherwise).' })
  @IsOptional()
  @IsString()
  @Matches(/^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$/)
  version?: string;
}

/** What applied prompt-template and automation proposals became: installed, resolvable, scheduled. */
@ApiTags('proposals')
@Controller()
// Installed artifacts go out as their stored bytes.
@UseInterceptors(VerbatimJsonInterceptor)
export class InstalledArtifactsController {
  constructor(
    private readonly templates: PromptTemplatesService,
    private readonly automations: AutomationRunnerService,
  ) {}

  @Scopes('proposals:read')
  @Get('/v1/prompt-templates')
  @ApiOperation({ operationId: 'listPromptTemplates', summary: 'List installed (resolvable) prompt templates' })
  @ApiOkResponse({
    schema: {
      type: 'object',
      required: ['templates', 'nextCursor'],
      properties: { templates: { type: 'array', items: PROMPT_TEMPLATE_ENTRY_SCHEMA }, nextCursor: NEXT_CURSOR_PROPERTY },
    },
  })
  @ApiErrors(400, 401, 403)
  async list(@CurrentPrincipal() p: Principal, @Query() q: PageQuery): Promise<{ templates: ResolvedPromptTemplate[]; nextCursor: string | null }> {
    // Resolved in memory (a workspace's template shadows the tenant's): paged by templateId.
    const page = arrayPage(await this.templates.list(p), (t) => String(t.template.templateId), q, { list: 'prompt-templates', tenant: p.tenant, workspace: p.workspace });
    return { templates: page.items, nextCursor: page.nextCursor };
  }

  @Scopes('proposals:read')
  @Get('/v1/prompt-templates/:templateId')
  @ApiOperation({ operationId: 'getPromptTemplate', summary: 'Resolve an installed prompt template by templateId' })
  @ApiParam({ name: 'templateId' })
  @ApiOkResponse({ schema: PROMPT_TEMPLATE_ENTRY_SCHEMA })
  @ApiErrors(400, 401, 403, 404)
  async get(@CurrentPrincipal() p: Principal, @Param('templateId') templateId: string, @Query() q: PromptTemplateQuery): Promise<ResolvedPromptTemplate> {
    return this.templates.resolve(p, templateId, q.version);
  }

  @Scopes('proposals:read')
  @Get('/v1/automations')
  @ApiOperation({ operationId: 'listAutomations', summary: 'List installed automations and their schedules' })
  @ApiOkResponse({ schema: AUTOMATION_LIST_SCHEMA })
  @ApiErrors(400, 401, 403)
  async automationsList(@CurrentPrincipal() p: Principal, @Query() q: PageQuery): Promise<{ automations: AutomationView[]; nextCursor: string | null }> {
    const page = await this.automations.list(p, q);
    return { automations: page.items, nextCursor: page.nextCursor };
  }
}
