import { Injectable, OnModuleInit } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { EventLogService } from '../../../platform/events/event-log.service';
import type { RunStreams } from '../../../platform/events/run-streams';
import type { TenantScope } from '../../../platform/identity/principal';

/**
 * The event log's questions about the streams that are runs, answered with the run table's SQL
 * (the platform's RunStreams port): which runs a replica follows (`run.followed_until`, set while a
 * replica that does not execute the run has followers of it, so the writes notify it), and the run
 * row the open-run read starts from.
 */
@Injectable()
export class RunStreamsOwner implements RunStreams, OnModuleInit {
  constructor(
    private readonly ds: DataSource,
    private readonly events: EventLogService,
  ) {}

  onModuleInit(): void {
    this.events.registerRunStreams(this);
  }

  followed(ids: string): string {
    return `SELECT f."id"::text AS "id" FROM "run" f WHERE f."id" = ANY(${ids}) AND f."followed_until" > now()`;
  }

  async markFollowed(scope: TenantScope, runId: string): Promise<void> {
    await this.ds.query(`UPDATE "run" SET "followed_until" = now() + interval '60 seconds' WHERE "id" = $1 AND "tenant" = $2`, [runId, scope.tenant]);
  }

  readonly openRunSource = `SELECT o."id", o."tenant", o."status" FROM "run" o WHERE o."id" = $1::uuid AND o."tenant" = $2 AND ($3::text IS NULL OR o."workspace" = $3::text)`;
}
