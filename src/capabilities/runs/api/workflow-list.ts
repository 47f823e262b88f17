import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, IsString, MaxLength } from '../../../platform/http/dto-validation';
import { NEXT_CURSOR_PROPERTY, PageQuery } from '../../../platform/pagination/page-query';
import type { Principal } from '../../../platform/identity/principal';
import { arrayPage } from '../../../platform/pagination/keyset';
import type { ResolvedChain, WorkflowResolver } from '../workflow-resolver.service';

/** `GET /v1/workflows` (and gRPC ListWorkflows): `limit`, `cursor` and an optional pack filter. */
export class WorkflowListQuery extends PageQuery {
  @ApiPropertyOptional({ description: 'Only the chains of this workflow-chain pack (its `name`).', maxLength: 200 })
  @IsOptional()
  @IsString()
  @MaxLength(200)
  pack?: string;
}

/** One installed workflow a caller may start: what a start form needs (its declared input parameters among it). */
export interface WorkflowSummary {
  workflowId: string;
  name: string;
  version: string | null;
  description: string | null;
  pack: string | null;
  /** The JSON Schema of the run inputs the chain declares; null when it declares none (any inputs are taken). */
  parameters: Record<string, unknown> | null;
}

function workflowSummary(c: ResolvedChain): WorkflowSummary {
  return {
    workflowId: c.chainId,
    name: c.label ?? c.chainId,
    version: c.version ?? null,
    description: c.description ?? null,
    pack: c.pack ?? null,
    parameters: c.parameters ?? null,
  };
}

const nullable = (type: string, description: string) => ({ type, nullable: true, description });

export const WORKFLOW_LIST_SCHEMA = {
  type: 'object',
  required: ['workflows', 'nextCursor'],
  properties: {
    workflows: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['workflowId', 'name', 'version', 'description', 'pack', 'parameters'],
        properties: {
          workflowId: { type: 'string', description: 'The chain id `POST /v1/runs` takes as `workflowId`.' },
          name: { type: 'string', description: 'The chain\'s label, else its id.' },
          version: nullable('string', 'The chain\'s (or its pack\'s) version.'),
          description: nullable('string', 'What the chain does, as its pack says.'),
          pack: nullable('string', 'The workflow-chain pack holding the chain.'),
          parameters: { type: 'object', nullable: true, additionalProperties: true, description: 'The JSON Schema its run inputs are checked against (400 validation_error at `/inputs/...`); null: any inputs.' },
        },
      },
    },
    nextCursor: NEXT_CURSOR_PROPERTY,
  },
};

/** One page of the caller's workflows (REST `GET /v1/workflows` and gRPC ListWorkflows). */
export async function listWorkflows(resolver: WorkflowResolver, p: Principal, q: WorkflowListQuery): Promise<{ workflows: WorkflowSummary[]; nextCursor: string | null }> {
  const all = (await resolver.list(p)).filter((c) => q.pack === undefined || c.pack === q.pack).map(workflowSummary);
  const page = arrayPage(all, (w) => w.workflowId, q, { list: 'workflows', tenant: p.tenant, workspace: p.workspace, filters: { pack: q.pack } });
  return { workflows: page.items, nextCursor: page.nextCursor };
}
