import { Controller, Get, Param, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import { AnyScope, CurrentPrincipal, Scopes } from '../../../platform/identity/decorators';
import type { Principal } from '../../../platform/identity/principal';
import { ApiErrors } from '../../../platform/openapi/api-errors.decorator';
import { protocolSchemaRef } from '../../../platform/openapi/protocol-schemas';
import type { WorkflowDefinitionView } from './workflow-definition-view';
import { WorkflowResolver } from '../workflow-resolver.service';
import { listWorkflows, WORKFLOW_LIST_SCHEMA, WorkflowListQuery, WorkflowSummary } from './workflow-list';

@ApiTags('workflows')
@Controller()
export class WorkflowsController {
  constructor(private readonly resolver: WorkflowResolver) {}

  /**
   * The workflows the caller's tenant (and workspace) can start, by id: its installed chains and the
   * host-wide pack folder's (host chains and conformance fixtures are not listed), each with the input
   * parameters it declares, so a client can build a start form. Paged by workflowId; `pack` filters.
   */
  @Scopes()
  @AnyScope('manifest:read', 'runs:create')
  @Get('/v1/workflows')
  @ApiOperation({ operationId: 'listWorkflows', summary: 'List the installed workflows the caller can start, with their declared inputs' })
  @ApiOkResponse({ schema: WORKFLOW_LIST_SCHEMA })
  @ApiErrors(400, 401, 403)
  async list(@CurrentPrincipal() p: Principal, @Query() q: WorkflowListQuery): Promise<{ workflows: WorkflowSummary[]; nextCursor: string | null }> {
    return listWorkflows(this.resolver, p, q);
  }

  /**
   * The definition of a workflow installed for the caller's tenant (a workflow-chain pack's chain,
   * or a conformance fixture while the test seams are on). Unknown, foreign and non-executable ids
   * are 404. Readable with manifest:read, or with runs:create: whoever may start a workflow may read
   * what it would run.
   */
  @Scopes()
  @AnyScope('manifest:read', 'runs:create')
  @Get('/v1/workflows/:workflowId')
  @ApiOperation({ operationId: 'getWorkflow', summary: 'Read an installed workflow definition (unknown and foreign ids are 404)' })
  @ApiParam({ name: 'workflowId', description: 'A chain id (or `workflow:<chainId>`)' })
  @ApiOkResponse({ schema: protocolSchemaRef('WorkflowDefinition') })
  @ApiErrors(401, 403, 404)
  get(@CurrentPrincipal() p: Principal, @Param('workflowId') workflowId: string): Promise<WorkflowDefinitionView> {
    return this.resolver.definition(p, workflowId);
  }
}
