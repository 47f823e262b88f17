import { Controller, Get, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { DataSource } from 'typeorm';
import { MIGRATIONS } from '../../../migrations';
import { pendingMigrations } from '../database/migration-runner';
import { Public } from '../identity/decorators';
import { HealthService } from './health.service';

/** /readyz answers within this, whatever the database does. */
export const READY_DEADLINE_MS = 1500;

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

  /** One database check at a time: probes arriving meanwhile share it instead of piling up on a slow database. */
  private checking?: Promise<{ database: string; pending: string[] }>;

  private checkDatabase(): Promise<{ database: string; pending: string[] }> {
    this.checking ??= (async () => {
      try {
        await this.ds.query('SELECT 1');
        const pending = await pendingMigrations(this.ds, MIGRATIONS);
        return { database: pending.length ? 'migrations pending' : 'ok', pending };
      } catch {
        return { database: 'unreachable', pending: [] };
      }
    })().finally(() => (this.checking = undefined));
    return this.checking;
  }

  /**
   * Readiness: the database answers and every migration is applied. Degradations are listed but do
   * not fail it. It answers within READY_DEADLINE_MS whatever the database does (a hung one is
   * `unreachable`), so a probe's own timeout never fires first.
   */
  @Public()
  @Get('/readyz')
  async ready(@Res() reply: FastifyReply): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<{ database: string; pending: string[] }>((resolve) => (timer = setTimeout(() => resolve({ database: 'unreachable', pending: [] }), READY_DEADLINE_MS)));
    const { database, pending } = await Promise.race([this.checkDatabase(), late]).finally(() => clearTimeout(timer));
    const ready = database === 'ok';
    const components = this.health.snapshot();
    await reply.status(ready ? 200 : 503).send({
      status: ready ? (this.health.degraded() ? 'degraded' : 'ok') : 'unavailable',
      database,
      ...(pending.length ? { pendingMigrations: pending } : {}),
      components,
    });
  }
}
