import { Body, Controller, HttpCode, Post } from '@nestjs/common';
import { ApiBody, ApiOkResponse, ApiOperation, ApiProperty, ApiTags } from '@nestjs/swagger';
import { IsIn } from '../../../platform/http/dto-validation';
import { DataSource } from 'typeorm';
import { EventLogService } from '../../../platform/events/event-log.service';
import { CurrentPrincipal, Scopes, TestSeam } from '../../../platform/identity/decorators';
import type { Principal } from '../../../platform/identity/principal';
import { ApiErrors } from '../../../platform/openapi/api-errors.decorator';
import { RunForkService } from '../replay/run-fork.service';
import { RunCreationService } from '../run-creation.service';
import { settledStatus } from '../seams/settled-status';

const SCENARIOS = ['exhaust-retries', 'fork-after-dead-letter'] as const;

class ExhaustBody {
  @ApiProperty({ enum: SCENARIOS })
  @IsIn(SCENARIOS)
  scenario: (typeof SCENARIOS)[number];
}

/**
 * `POST /v1/host/sample/deadletter/exhaust {scenario}` (deadletter-retry-exhaustion): runs the
 * `conformance-dead-letter` fixture (a node failing under a 3-attempt retry policy) to its end and answers the
 * `run.dead_lettered` event read back from the run's log; `fork-after-dead-letter` then forks the dead-lettered
 * run (`mode: "replay"`) and answers whether that fork was accepted.
 */
@ApiTags('test-seams')
@Controller()
export class DeadLetterSeamController {
  constructor(
    private readonly creation: RunCreationService,
    private readonly forks: RunForkService,
    private readonly events: EventLogService,
    private readonly ds: DataSource,
  ) {}

  @TestSeam()
  @Scopes('runs:create', 'runs:read')
  @Post('/v1/host/sample/deadletter/exhaust')
  @HttpCode(200)
  @ApiOperation({ operationId: 'seamDeadLetterExhaust', summary: '(test seam) RFC 0053: exhaust a retry policy and answer the run.dead_lettered event, or fork the dead-lettered run' })
  @ApiBody({ type: ExhaustBody })
  @ApiOkResponse({ schema: { type: 'object', required: ['runId'], properties: { runId: { type: 'string' }, event: { type: 'object' }, forkEligible: { type: 'boolean' }, forkRunId: { type: 'string' } } } })
  @ApiErrors(400, 401, 403)
  async exhaust(@CurrentPrincipal() p: Principal, @Body() body: ExhaustBody): Promise<Record<string, unknown>> {
    const { snapshot } = await this.creation.create(p, { workflowId: 'conformance-dead-letter', inputs: {} });
    const runId = snapshot.runId;
    const status = await settledStatus(this.ds.manager, p, runId, snapshot.status);
    const lettered = (await this.events.read(p, runId, { type: 'run.dead_lettered' }))[0];
    const event = lettered ? { type: lettered.type, payload: lettered.payload } : undefined;
    if (body.scenario === 'exhaust-retries') return { runId, status, ...(event ? { event } : {}) };
    if (!event) return { runId, status, forkEligible: false };
    const fork = await this.forks.fork(p, runId, { mode: 'replay' });
    return { runId, status, forkEligible: true, forkRunId: fork.answer.runId };
  }
}
