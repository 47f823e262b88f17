import { Controller, Get, Param } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import { AnyScope, CurrentPrincipal, Scopes } from '../../../platform/identity/decorators';
import type { Principal } from '../../../platform/identity/principal';
import { ApiErrors } from '../../../platform/openapi/api-errors.decorator';
import { protocolSchemaRef } from '../../../platform/openapi/protocol-schemas';
import type { WorkflowDefinitionView } from './workflow-definition-view';
import { WorkflowResolver } from '../workflow-resolver.service';

@ApiTags('workflows')
@Controller()
export class WorkflowsController {
  constructor(private readonly resolver: WorkflowResolver) {}

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
