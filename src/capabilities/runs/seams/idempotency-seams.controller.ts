import { Body, Controller, HttpCode, Post } from '@nestjs/common';
import { ApiBody, ApiOkResponse, ApiOperation, ApiProperty, ApiTags } from '@nestjs/swagger';
import { IsInt, Max, Min } from '../../../platform/http/dto-validation';
import { ActivityLedger, effectRunner } from '../../../platform/idempotency/activity-ledger.service';
import { CurrentPrincipal, Scopes, TestSeam } from '../../../platform/identity/decorators';
import type { Principal } from '../../../platform/identity/principal';
import { ApiErrors } from '../../../platform/openapi/api-errors.decorator';
import { RunCreationService } from '../run-creation.service';

/** Most executors one seam call races. */
const MAX_EXECUTORS = 32;

class ConcurrentClaimBody {
  @ApiProperty({ type: 'integer', minimum: 2, maximum: MAX_EXECUTORS, description: 'How many executors of the run race to the same effect.' })
  @IsInt()
  @Min(2)
  @Max(MAX_EXECUTORS)
  executors: number;
}

interface ConcurrentClaimResult {
  runId: string;
  nodeId: string;
  logicalInvocationId: string;
  mintedIds: string[];
  attempted: number;
  delivered: number;
}

const RESULT_SCHEMA = {
  type: 'object',
  required: ['runId', 'nodeId', 'logicalInvocationId', 'mintedIds', 'attempted', 'delivered'],
  properties: {
    runId: { type: 'string', description: 'The run whose node the executors execute.' },
    nodeId: { type: 'string' },
    logicalInvocationId: { type: 'string', description: 'The identity the first executor minted.' },
    mintedIds: { type: 'array', items: { type: 'string' }, description: 'The identity each executor minted, in executor order.' },
    attempted: { type: 'integer', description: 'Executors that reached the effect.' },
    delivered: { type: 'integer', description: 'Times the effect was actually performed.' },
  },
};

/** The node id the seam's executors execute (no chain node has it, so no real execution shares its effects). */
const SEAM_NODE = 'concurrent-claim';
const PROVIDER_KEY = 'openwop-host:conformance-effect';

/**
 * host-sample-test-seams.md §25 (`idempotency-concurrent-claim`): starts a run of the caller's
 * (`conformance-noop`), then has N executors of one of its nodes reach the same side effect at once
 * through the effect surface the engine gives every node execution (`NodeExecutionContext.effect`):
 * each executor re-executes the node from its start (its own ordinal counter, so it mints the
 * identity itself), all calls are issued before any is awaited, and the effect counts how often it is
 * really performed. The invocation log's insert-if-absent claim is what keeps that at one.
 */
@ApiTags('runs')
@Controller()
export class IdempotencySeamsController {
  constructor(
    private readonly ledger: ActivityLedger,
    private readonly creation: RunCreationService,
  ) {}

  @TestSeam()
  @Scopes('runs:create')
  @Post('/v1/host/sample/test/idempotency/concurrent-claim')
  @HttpCode(200)
  @ApiOperation({ operationId: 'seamConcurrentEffectClaim', summary: '(test seam) N concurrent executors of one run reach one side effect: {logicalInvocationId, mintedIds, attempted, delivered}' })
  @ApiBody({ type: ConcurrentClaimBody })
  @ApiOkResponse({ schema: RESULT_SCHEMA })
  @ApiErrors(400, 401, 403)
  async concurrentClaim(@CurrentPrincipal() p: Principal, @Body() body: ConcurrentClaimBody): Promise<ConcurrentClaimResult> {
    const { snapshot } = await this.creation.create(p, { workflowId: 'conformance-noop', inputs: {} });
    const minted: string[] = new Array(body.executors);
    let delivered = 0;
    const base = { tenant: p.tenant, runId: snapshot.runId, nodeId: SEAM_NODE };
    const executions = Array.from({ length: body.executors }, (_, i) => {
      const effect = effectRunner(this.ledger, base, undefined, (id) => (minted[i] = id));
      return effect(PROVIDER_KEY, async () => {
        delivered++;
        // Held a moment, so the other executors arrive while the winner is still performing.
        await new Promise((r) => setTimeout(r, 25));
        return { performedBy: i };
      });
    });
    const settled = await Promise.allSettled(executions);
    const failed = settled.find((s) => s.status === 'rejected') as PromiseRejectedResult | undefined;
    if (failed) throw failed.reason;
    return { runId: snapshot.runId, nodeId: SEAM_NODE, logicalInvocationId: minted[0], mintedIds: minted, attempted: body.executors, delivered };
  }
}
