import { Controller, Get, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { DataSource } from 'typeorm';
import { Public } from '../identity/decorators';
import { HealthService } from './health.service';
import { checkReadiness } from './readiness';

@ApiExcludeController()
@Controller()
export class HealthController {
  constructor(
    private readonly ds: DataSource,
    private readonly health: HealthService,
  ) {}

  /** Liveness: the process answers. */
  @Public()
  @Get('/healthz')
  live(): { status: string } {
    return { status: 'ok' };
  }

  /**
   * Readiness: the database answers and every migration is applied. Degradations are listed but do
   * not fail it. It answers within READY_DEADLINE_MS whatever the database does (a hung one is
   * `unreachable`), so a probe's own timeout never fires first.
   */
  @Public()
  @Get('/readyz')
  async ready(@Res() reply: FastifyReply): Promise<void> {
    const { ready, database, pendingMigrations: pending } = await checkReadiness(this.ds);
    const components = this.health.snapshot();
    await reply.status(ready ? 200 : 503).send({
      status: ready ? (this.health.degraded() ? 'degraded' : 'ok') : 'unavailable',
      database,
      ...(pending.length ? { pendingMigrations: pending } : {}),
      components,
    });
  }
}
