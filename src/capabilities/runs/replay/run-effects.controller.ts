import { Controller, Get, Param, Req } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import { DataSource } from 'typeorm';
import { NotFoundError } from '../../../platform/errors/domain-error';
import { requestMajor } from '../../../platform/http/protocol-version';
import { ActivityLedger } from '../../../platform/idempotency/activity-ledger.service';
import { CurrentPrincipal, Scopes } from '../../../platform/identity/decorators';
import type { Principal } from '../../../platform/identity/principal';
import { ApiErrors } from '../../../platform/openapi/api-errors.decorator';
import { findRun } from '../run-snapshot';

/** The ledger's states as the projection names them: a claim in flight, a performed effect, a failed one (released: nothing recorded stands). */
const STATE: Record<string, string> = { pending: 'claimed', completed: 'completed', failed: 'released' };

const EFFECTS_SCHEMA = {
  type: 'object',
  required: ['runId', 'effects'],
  properties: {
    runId: { type: 'string' },
    effects: {
      type: 'array',
      items: {
        type: 'object',
        required: ['effectId', 'nodeId', 'attempt', 'keying', 'state', 'at'],
        properties: {
          effectId: { type: 'string', description: 'The logical invocation id (tenant-bound under major 2).' },
          nodeId: { type: 'string' },
          attempt: { type: 'integer', description: 'Always 1: the ledger performs a logical effect once; a retry or a replica re-running the node reads the recorded outcome.' },
          keying: { type: 'string', enum: ['activity-recipe'] },
          providerKey: { type: 'string', description: 'The effect’s provider-side name (no credential material, no payload).' },
          state: { type: 'string', enum: ['claimed', 'completed', 'released'] },
          at: { type: 'string', format: 'date-time' },
        },
      },
    },
  },
};

/**
 * `GET /v1/runs/{runId}/effects` (`GET /runs/{runId}/effects` under major 2, RFC 0173 §C.2): the
 * run's Layer-2 effect ledger, one row per logical effect its nodes performed through `ctx.effect`
 * (the activity ledger), identity and timing only. A replay fork's ledger holds only what the fork
 * itself performed: inherited history and recorded outcomes perform nothing.
 */
@ApiTags('runs')
@Controller()
export class RunEffectsController {
  constructor(
    private readonly ds: DataSource,
    private readonly ledger: ActivityLedger,
  ) {}

  @Scopes('runs:read')
  @Get('/v1/runs/:runId/effects')
  @ApiOperation({ operationId: 'getRunEffects', summary: 'The run’s Layer-2 effect ledger: one row per logical effect performed (identity and timing, never payloads)' })
  @ApiParam({ name: 'runId' })
  @ApiOkResponse({ schema: EFFECTS_SCHEMA })
  @ApiErrors(401, 403, 404)
  async effects(@CurrentPrincipal() p: Principal, @Param('runId') runId: string, @Req() req: unknown): Promise<Record<string, unknown>> {
    const run = await findRun(this.ds.manager, p, runId);
    if (!run) throw new NotFoundError('No such run.');
    const bound = requestMajor(req) === 2;
    const rows = await this.ledger.invocationsOf(run.tenant, run.id);
    return {
      runId: run.id,
      effects: rows.map((r) => ({
        // Under major 2 an effect id is tenant-bound like a run id (identity.md §5).
        effectId: bound ? `${run.tenant}/${r.logicalInvocationId}` : r.logicalInvocationId,
        nodeId: r.nodeId,
        attempt: 1,
        keying: 'activity-recipe',
        providerKey: r.providerKey,
        state: STATE[r.state] ?? 'claimed',
        at: r.createdAt.toISOString(),
      })),
    };
  }
}
