import { Controller, Get, Res } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { Public, Scopes } from '../identity/decorators';
import { ApiErrors } from '../openapi/api-errors.decorator';
import { MetricsService } from './metrics.service';

const METRICS_SCOPE = 'metrics:read';

const EXPOSITION = {
  description: 'Prometheus text exposition format 0.0.4.',
  content: { 'text/plain': { schema: { type: 'string' } } },
};

async function send(metrics: MetricsService, reply: FastifyReply): Promise<void> {
  const { contentType, body } = await metrics.render();
  await reply.header('cache-control', 'no-store').type(contentType).send(body);
}

/** `OPENWOP_METRICS=scope` (the default): a credential holding `metrics:read`. */
@ApiTags('operations')
@Controller()
export class ScopedMetricsController {
  constructor(private readonly metrics: MetricsService) {}

  @Scopes(METRICS_SCOPE)
  @Get('/metrics')
  @ApiOperation({ operationId: 'getMetrics', summary: 'Prometheus metrics of this replica (OPENWOP_METRICS=scope: needs metrics:read)' })
  @ApiOkResponse(EXPOSITION)
  @ApiErrors(401, 403)
  async get(@Res() reply: FastifyReply): Promise<void> {
    await send(this.metrics, reply);
  }
}

/** `OPENWOP_METRICS=public`: anyone who reaches the port (put it behind the network boundary). */
@ApiTags('operations')
@Controller()
export class PublicMetricsController {
  constructor(private readonly metrics: MetricsService) {}

  @Public()
  @Get('/metrics')
  @ApiOperation({ operationId: 'getMetrics', summary: 'Prometheus metrics of this replica (OPENWOP_METRICS=public)' })
  @ApiOkResponse(EXPOSITION)
  async get(@Res() reply: FastifyReply): Promise<void> {
    await send(this.metrics, reply);
  }
}
