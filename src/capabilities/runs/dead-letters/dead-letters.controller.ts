import { Controller, Delete, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import { ApiBody, ApiOkResponse, ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import { AnyScope, CurrentPrincipal, Scopes } from '../../../platform/identity/decorators';
import type { Principal } from '../../../platform/identity/principal';
import { ApiErrors } from '../../../platform/openapi/api-errors.decorator';
import { NEXT_CURSOR_PROPERTY } from '../../../platform/pagination/page-query';
import { DeadLetterListQuery, DeadLetterRetryDto } from './dead-letters.dto';
import { WebhooksService } from '../../webhooks';
import { DeadLettersService, DeadLetterView } from './dead-letters.service';

const VIEW = {
  type: 'object',
  required: ['runId', 'workflowId', 'status', 'nodeId', 'reason', 'attempts', 'deadLetteredAt', 'expiresAt', 'retriedRunIds'],
  properties: {
    runId: { type: 'string' },
    workflowId: { type: 'string', nullable: true },
    status: { type: 'string', description: "The run's status (failed once it ended)." },
    nodeId: { type: 'string', description: 'The node whose retry policy was exhausted.' },
    reason: { type: 'string', description: "The node's error code (redaction-safe)." },
    attempts: { type: 'integer', minimum: 1 },
    deadLetteredAt: { type: 'string', format: 'date-time' },
    expiresAt: { type: 'string', format: 'date-time', description: 'deadLetteredAt + deadLetter.retentionDays.' },
    retriedRunIds: { type: 'array', items: { type: 'string' }, description: 'The runs started by POST …/retry, oldest first.' },
  },
};

/**
 * RFC 0053 run dead letters: runs whose node exhausted its retry policy, listed, read, retried and purged.
 * Webhook deliveries that exhausted their retries are read per subscription (`GET /v1/webhooks/{id}/dead-letters`).
 */
@ApiTags('runs')
@Controller()
export class DeadLettersController {
  constructor(
    private readonly letters: DeadLettersService,
    private readonly webhooks: WebhooksService,
  ) {}

  @Scopes('runs:read')
  @Get('/v1/dead-letters')
  @ApiOperation({ operationId: 'listDeadLetters', summary: 'List the dead-lettered runs of your tenant (newest first, cursor-paged)' })
  @ApiOkResponse({ schema: { type: 'object', required: ['deadLetters', 'nextCursor'], properties: { deadLetters: { type: 'array', items: VIEW }, nextCursor: NEXT_CURSOR_PROPERTY } } })
  @ApiErrors(400, 401, 403)
  list(@CurrentPrincipal() p: Principal, @Query() q: DeadLetterListQuery): Promise<{ deadLetters: DeadLetterView[]; nextCursor: string | null }> {
    return this.letters.list(p, q);
  }

  @Scopes('runs:read')
  @Get('/v1/dead-letters/:runId')
  @ApiOperation({ operationId: 'getDeadLetter', summary: 'Inspect one dead-lettered run (its full run stays at GET /v1/runs/{runId})' })
  @ApiOkResponse({ schema: VIEW })
  @ApiErrors(401, 403, 404)
  get(@CurrentPrincipal() p: Principal, @Param('runId') runId: string): Promise<DeadLetterView> {
    return this.letters.get(p, runId);
  }

  @Scopes('runs:create')
  @Post('/v1/dead-letters/:runId/retry')
  @ApiBody({ required: false, description: 'No body (an empty object is accepted).', type: DeadLetterRetryDto })
  @HttpCode(201)
  @ApiOperation({ operationId: 'retryDeadLetter', summary: "Run a dead-lettered run's workflow again with its inputs and configurable: 201 {runId, deadLetter}" })
  @ApiResponse({ status: 201, schema: { type: 'object', required: ['runId', 'deadLetter'], properties: { runId: { type: 'string' }, deadLetter: VIEW } } })
  @ApiErrors(400, 401, 403, 404, 422)
  retry(@CurrentPrincipal() p: Principal, @Param('runId') runId: string): Promise<{ runId: string; deadLetter: DeadLetterView }> {
    return this.letters.retry(p, runId);
  }

  @Scopes('runs:cancel')
  @Delete('/v1/dead-letters/:runId')
  @HttpCode(204)
  @ApiOperation({ operationId: 'purgeDeadLetter', summary: 'Remove a run from the dead-letter sink (the run stays in the run history)' })
  @ApiResponse({ status: 204, description: 'Purged.' })
  @ApiErrors(401, 403, 404)
  async purge(@CurrentPrincipal() p: Principal, @Param('runId') runId: string): Promise<void> {
    await this.letters.purge(p, runId);
  }

  // Webhook deliveries that exhausted their retries are listed per subscription (GET /v1/webhooks/{id}/dead-letters).
  @Scopes('webhooks:read')
  @AnyScope('webhooks:manage', 'runs:create')
  @Post('/v1/dead-letters/deliveries/:deliveryId/retry')
  @ApiBody({ required: false, description: 'No body (an empty object is accepted).', type: DeadLetterRetryDto })
  @HttpCode(202)
  @ApiOperation({ operationId: 'retryDeliveryDeadLetter', summary: 'Send a dead-lettered webhook delivery again from its first attempt: 202 {deliveryId, status: "pending"}' })
  @ApiResponse({ status: 202, schema: { type: 'object', required: ['deliveryId', 'status'], properties: { deliveryId: { type: 'string' }, status: { type: 'string', enum: ['pending'] } } } })
  @ApiErrors(401, 403, 404)
  async retryDelivery(@CurrentPrincipal() p: Principal, @Param('deliveryId') deliveryId: string): Promise<{ deliveryId: string; status: 'pending' }> {
    await this.webhooks.redriveDeadLetter(p, deliveryId, 'retry');
    return { deliveryId, status: 'pending' };
  }

  @Scopes('webhooks:read')
  @AnyScope('webhooks:manage', 'runs:create')
  @Delete('/v1/dead-letters/deliveries/:deliveryId')
  @HttpCode(204)
  @ApiOperation({ operationId: 'purgeDeliveryDeadLetter', summary: 'Delete a dead-lettered webhook delivery' })
  @ApiResponse({ status: 204, description: 'Purged.' })
  @ApiErrors(401, 403, 404)
  async purgeDelivery(@CurrentPrincipal() p: Principal, @Param('deliveryId') deliveryId: string): Promise<void> {
    await this.webhooks.redriveDeadLetter(p, deliveryId, 'purge');
  }
}
