import { createHash } from 'node:crypto';
import { Body, Controller, HttpCode, Post, Res } from '@nestjs/common';
import { ApiBody, ApiOkResponse, ApiOperation, ApiProperty, ApiPropertyOptional, ApiTags } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { ArrayMaxSize, ArrayMinSize, IsArray, IsObject, IsOptional, IsString, Matches, MaxLength, MinLength, ValidateNested } from '../../../platform/http/dto-validation';
import type { FastifyReply } from 'fastify';
import { CurrentPrincipal, Scopes, TestSeam } from '../../../platform/identity/decorators';
import type { Principal } from '../../../platform/identity/principal';
import { ApiErrors } from '../../../platform/openapi/api-errors.decorator';
import { InstalledPacksService } from '../../tool-catalog';
import { ValidationError } from '../../../platform/errors/domain-error';
import { CapabilityToggles, usesInputMapping } from './capability-toggles';

class SampleNode {
  @ApiProperty()
  @IsString()
  @MinLength(1)
  @MaxLength(128)
  nodeId: string;

  @ApiProperty()
  @IsString()
  @MinLength(1)
  @MaxLength(256)
  typeId: string;

  @ApiPropertyOptional({ type: 'object', additionalProperties: true })
  @IsOptional()
  @IsObject()
  config?: Record<string, unknown>;
}

class SampleEdge {
  @ApiPropertyOptional()
  @IsOptional()
  @IsString()
  @MaxLength(128)
  edgeId?: string;

  @ApiProperty()
  @IsString()
  @MinLength(1)
  @MaxLength(128)
  sourceNodeId: string;

  @ApiProperty()
  @IsString()
  @MinLength(1)
  @MaxLength(128)
  targetNodeId: string;
}

class SampleWorkflowBody {
  @ApiProperty({ description: 'The chain id the workflow is installed (and run, and exposed) under.' })
  @IsString()
  @Matches(/^[a-z][a-zA-Z0-9._-]{0,255}$/, { message: 'workflowId must match ^[a-z][a-zA-Z0-9._-]*$ (a chain id), at most 256 characters' })
  workflowId: string;

  @ApiProperty({ type: [SampleNode] })
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(100)
  @ValidateNested({ each: true })
  @Type(() => SampleNode)
  nodes: SampleNode[];

  @ApiPropertyOptional({ type: [SampleEdge] })
  @IsOptional()
  @IsArray()
  @ArrayMaxSize(500)
  @ValidateNested({ each: true })
  @Type(() => SampleEdge)
  edges?: SampleEdge[];
}

/**
 * The sample-workflow seam of the MCP scenarios (`host-sample-test-seams.md` §"sample workflows"):
 * `{workflowId, nodes[{nodeId, typeId, config}], edges[{edgeId, sourceNodeId, targetNodeId}]}`
 * becomes a one-chain workflow-chain pack installed for the caller's tenant through the ordinary
 * install path (the same checks, the same pack registry; registering the same id again updates it),
 * so what the MCP mount lists and runs is exactly what an installed pack would give.
 */
@ApiTags('test-seams')
@Controller()
export class SampleWorkflowsController {
  constructor(
    private readonly packs: InstalledPacksService,
    private readonly toggles: CapabilityToggles,
  ) {}

  @TestSeam()
  // A test seam (404 unless OPENWOP_TEST_SEAMS=true), driven by the conformance suite's key, which may
  // start runs but not publish packs; outside the seams, installing a pack needs packs:publish.
  @Scopes('runs:create')
  @Post('/v1/host/sample/workflows')
  @HttpCode(201)
  @ApiOperation({ operationId: 'seamSampleWorkflow', summary: '(test seam) install a one-chain sample workflow for the caller\'s tenant: 201 created, 200 updated or unchanged' })
  @ApiBody({ type: SampleWorkflowBody })
  @ApiOkResponse({ schema: { type: 'object', required: ['workflowId', 'packId', 'outcome'], properties: { workflowId: { type: 'string' }, packId: { type: 'string' }, outcome: { type: 'string', enum: ['created', 'updated', 'unchanged'] } } } })
  @ApiErrors(400, 401, 403, 422)
  async register(@CurrentPrincipal() p: Principal, @Body() body: SampleWorkflowBody, @Res({ passthrough: true }) reply: FastifyReply): Promise<{ workflowId: string; packId: string; outcome: string }> {
    // RFC 0022 §C: without subWorkflow.inputMapping advertised, a non-empty inputMapping is refused at registration.
    if (!this.toggles.enabled('subWorkflow.inputMapping') && usesInputMapping({ nodes: body.nodes.map((n) => ({ typeId: n.typeId, config: n.config })) })) {
      throw new ValidationError('core.subWorkflow inputMapping needs the subWorkflow.inputMapping capability, which this host does not advertise now.', { requiredCapability: 'subWorkflow.inputMapping' });
    }
    const name = `private.sample-workflows.w${createHash('sha256').update(body.workflowId).digest('hex').slice(0, 24)}`;
    const manifest = {
      name,
      version: '1.0.0',
      kind: 'workflow-chain',
      engines: { openwop: '^1.0.0' },
      description: `Sample workflow ${body.workflowId} (test seam).`,
      chains: [
        {
          chainId: body.workflowId,
          version: '1.0.0',
          label: body.workflowId,
          description: 'Registered through the sample-workflow test seam.',
          parameters: { type: 'object' },
          dag: {
            nodes: body.nodes.map((n) => ({ id: n.nodeId, typeId: n.typeId, config: n.config ?? {} })),
            edges: (body.edges ?? []).map((e) => ({ from: e.sourceNodeId, to: e.targetNodeId })),
          },
        },
      ],
    };
    const { outcome, pack } = await this.packs.install(p, manifest);
    if (outcome !== 'created') reply.status(200);
    return { workflowId: body.workflowId, packId: pack.id, outcome };
  }
}
