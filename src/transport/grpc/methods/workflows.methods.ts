import { Injectable } from '@nestjs/common';
import { WorkflowResolver, WorkflowsController } from '../../../capabilities/runs';
import { EngineCall, EngineMethod, UnaryEngineMethod } from '../engine-method';
import type { JsonObject } from '../json-struct';

/** GetWorkflow: `GET /v1/workflows/{workflowId}`, the WorkflowDefinition of a chain installed for the caller's tenant. */
@Injectable()
@EngineMethod()
export class GetWorkflowMethod implements UnaryEngineMethod {
  readonly name = 'GetWorkflow';
  readonly kind = 'unary';
  readonly rest = { controller: WorkflowsController, handler: 'get' };

  constructor(private readonly resolver: WorkflowResolver) {}

  handle(call: EngineCall, request: JsonObject): Promise<unknown> {
    return this.resolver.definition(call.requirePrincipal(), typeof request.workflowId === 'string' ? request.workflowId : '');
  }
}
