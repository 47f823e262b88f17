import { Injectable } from '@nestjs/common';
import { ApprovalListQuery, ApprovalsController, ApprovalsService } from '../../../capabilities/approvals';
import { listWorkflows, RunListQuery, RunsController, RunsService, WorkflowListQuery, WorkflowResolver, WorkflowsController } from '../../../capabilities/runs';
import { parseCatalogSource, parseCatalogView, ToolCatalogController, ToolCatalogService } from '../../../capabilities/tool-catalog';
import { EngineCall, EngineMethod, UnaryEngineMethod } from '../engine-method';
import type { JsonObject } from '../json-struct';

/**
 * The lists over gRPC (this host's additions to openwop.v1.Engine): each the twin of one REST
 * collection route, its request message the route's query (the same DTO validates it, so a filter
 * or cursor REST refuses is refused in the same words), its answer the REST body. A paged list's
 * cursor is the route's own: one a REST page answered pages over gRPC, and back. REST's
 * `nextCursor: null` on the last page is an absent `next_cursor` (proto3 strings have no null).
 */

/** The REST page body with `nextCursor: null` left out (the message's optional field unset). */
function page<T extends { nextCursor: string | null }>(body: T): Omit<T, 'nextCursor'> & { nextCursor?: string } {
  const { nextCursor, ...rest } = body;
  return nextCursor === null ? rest : { ...rest, nextCursor };
}

/** ListRuns: `GET /v1/runs` (status and workflowId filters, limit, cursor), newest first. */
@Injectable()
@EngineMethod()
export class ListRunsMethod implements UnaryEngineMethod {
  readonly name = 'ListRuns';
  readonly kind = 'unary';
  readonly rest = { controller: RunsController, handler: 'list' };

  constructor(private readonly runs: RunsService) {}

  async handle(call: EngineCall, request: JsonObject): Promise<unknown> {
    const q = await call.validate(RunListQuery, request, 'query');
    return page(await this.runs.list(call.requirePrincipal(), q));
  }
}

/**
 * ListTools: `GET /v1/tools` (view, source), the very body REST sends (the catalog serializes it
 * once per snapshot), read back: the standard view's bare array and the compact view's `{tools}`
 * both travel as `tools`. Not paged, like its route; REST's ETag / If-None-Match has no gRPC twin.
 */
@Injectable()
@EngineMethod()
export class ListToolsMethod implements UnaryEngineMethod {
  readonly name = 'ListTools';
  readonly kind = 'unary';
  readonly rest = { controller: ToolCatalogController, handler: 'list' };

  constructor(private readonly catalog: ToolCatalogService) {}

  async handle(call: EngineCall, request: JsonObject): Promise<unknown> {
    const view = parseCatalogView(request.view);
    const source = parseCatalogSource(request.source);
    const { body } = await this.catalog.listJson(call.requirePrincipal(), { view, source });
    const parsed = JSON.parse(body.toString('utf8')) as unknown[] | { tools: unknown[] };
    return { tools: Array.isArray(parsed) ? parsed : parsed.tools };
  }
}

/** ListApprovals: `GET /v1/approvals` (state filter, limit, cursor) of the caller's tenant·workspace. */
@Injectable()
@EngineMethod()
export class ListApprovalsMethod implements UnaryEngineMethod {
  readonly name = 'ListApprovals';
  readonly kind = 'unary';
  readonly rest = { controller: ApprovalsController, handler: 'list' };

  constructor(private readonly approvals: ApprovalsService) {}

  async handle(call: EngineCall, request: JsonObject): Promise<unknown> {
    const q = await call.validate(ApprovalListQuery, request, 'query');
    const found = await this.approvals.list(call.requirePrincipal(), q);
    return page({ approvals: found.items, nextCursor: found.nextCursor });
  }
}

/**
 * ListWorkflows: `GET /v1/workflows` (pack filter, limit, cursor), by workflowId. REST's null
 * members (version, description, pack, parameters of a chain without them) are unset fields.
 */
@Injectable()
@EngineMethod()
export class ListWorkflowsMethod implements UnaryEngineMethod {
  readonly name = 'ListWorkflows';
  readonly kind = 'unary';
  readonly rest = { controller: WorkflowsController, handler: 'list' };

  constructor(private readonly resolver: WorkflowResolver) {}

  async handle(call: EngineCall, request: JsonObject): Promise<unknown> {
    const q = await call.validate(WorkflowListQuery, request, 'query');
    const found = await listWorkflows(this.resolver, call.requirePrincipal(), q);
    const workflows = found.workflows.map((w) => Object.fromEntries(Object.entries(w).filter(([, v]) => v !== null)));
    return page({ workflows, nextCursor: found.nextCursor });
  }
}
