import { Inject, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { RunService } from '../../../platform/events/run.service';
import type { Principal, TenantScope } from '../../../platform/identity/principal';
import { PeriodicTaskService } from '../../../platform/scheduler/periodic-task.service';
import { keysetPage } from '../../../platform/pagination/keyset';
import type { Page, PageRequest } from '../../../platform/pagination/page-query';
import { PROPOSALS_SETTINGS, ProposalsSettings } from '../proposals.settings';
import { AutomationScheduleEntity } from './automation-schedule.entity';
import { AutomationSpec, nextRunAfter } from './automation-spec';

export interface AutomationView {
  name: string;
  workspace?: string;
  enabled: boolean;
  schedule: AutomationSpec['schedule'];
  action: Record<string, unknown>;
  artifactRef: string;
  nextRunAt: string | null;
  lastRunAt: string | null;
  lastRunId: string | null;
  runCount: number;
}

export interface FiredAutomation {
  tenant: string;
  name: string;
  runId: string;
}

/**
 * Fires installed automations when due. Each due row is claimed with `FOR UPDATE SKIP LOCKED` in the
 * transaction that records the run and moves `next_run_at`, so across replicas a slot fires once.
 */
@Injectable()
export class AutomationRunnerService implements OnApplicationBootstrap {
  private readonly logger = new Logger('automations');

  constructor(
    private readonly ds: DataSource,
    private readonly runs: RunService,
    private readonly tasks: PeriodicTaskService,
    @Inject(PROPOSALS_SETTINGS) private readonly settings: ProposalsSettings,
  ) {}

  onApplicationBootstrap(): void {
    if (!this.settings.automations.enabled) return;
    this.tasks.register({
      name: 'proposals.automations',
      intervalMs: this.settings.automations.tickIntervalMs,
      run: async (signal) => {
        while (!signal.aborted) {
          const fired = await this.fireDue();
          if (fired.length < this.settings.automations.batchSize) return;
        }
      },
    });
  }

  /** Fires one batch of due automations (every tenant). Returns what fired. */
  async fireDue(tenant?: string): Promise<FiredAutomation[]> {
    return this.ds.transaction(async (m) => {
      const params: unknown[] = [this.settings.automations.batchSize];
      if (tenant) params.push(tenant);
      const due = (await m.query(
        `SELECT "id", now() AS "db_now" FROM "automation_schedule"
         WHERE "enabled" AND "next_run_at" <= now() ${tenant ? 'AND "tenant" = $2' : ''}
         ORDER BY "next_run_at" LIMIT $1 FOR UPDATE SKIP LOCKED`,
        params,
      )) as Array<{ id: string; db_now: Date }>;
      const repo = m.getRepository(AutomationScheduleEntity);
      const fired: FiredAutomation[] = [];
      for (const { id, db_now } of due) {
        const row = await repo.findOneByOrFail({ id });
        const owner: Principal = {
          tenant: row.tenant,
          workspace: row.workspaceKey || undefined,
          principal: row.installedBy,
          scopes: new Set(),
          kind: 'system',
        };
        // No workflow engine runs here: the run is recorded `queued` with its action for the executor.
        const run = await this.runs.create(owner, 'automation', { automation: row.name, artifactRef: row.artifactRef, action: row.action }, m);
        await this.runs.setStatus(owner, run.runId, 'queued', m);
        const schedule = row.cron ? { cron: row.cron, ...(row.timezone ? { timezone: row.timezone } : {}) } : { intervalMs: row.intervalMs as number };
        await repo.update(
          { id },
          { lastRunAt: new Date(db_now), lastRunId: run.runId, runCount: row.runCount + 1, nextRunAt: nextRunAfter(schedule, new Date(db_now)) },
        );
        fired.push({ tenant: row.tenant, name: row.name, runId: run.runId });
      }
      if (fired.length) this.logger.log({ fired: fired.length }, 'automations fired');
      return fired;
    });
  }

  /** The automations installed for a scope (its own workspace's and the tenant-wide ones). */
  /** A page of the caller's automations, by name. */
  async list(scope: TenantScope, q: PageRequest = {}): Promise<Page<AutomationView>> {
    const qb = this.ds
      .getRepository(AutomationScheduleEntity)
      .createQueryBuilder('a')
      .where('a.tenant = :t', { t: scope.tenant })
      .andWhere('a.workspace_key IN (:...w)', { w: scope.workspace ? ['', scope.workspace] : [''] });
    const page = await keysetPage(qb, q, {
      keys: [{ column: 'a.name', type: 'text' }, { column: 'a.id', type: 'uuid' }],
      direction: 'ASC',
      binding: { list: 'automations', tenant: scope.tenant, workspace: scope.workspace },
    });
    const items = page.items.map((r) => ({
      name: r.name,
      workspace: r.workspaceKey || undefined,
      enabled: r.enabled,
      schedule: r.cron ? { cron: r.cron, ...(r.timezone ? { timezone: r.timezone } : {}) } : { intervalMs: r.intervalMs as number },
      action: r.action,
      artifactRef: r.artifactRef,
      nextRunAt: r.nextRunAt?.toISOString() ?? null,
      lastRunAt: r.lastRunAt?.toISOString() ?? null,
      lastRunId: r.lastRunId,
      runCount: r.runCount,
    }));
    return { items, nextCursor: page.nextCursor };
  }
}
