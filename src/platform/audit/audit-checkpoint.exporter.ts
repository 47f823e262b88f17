import * as fs from 'node:fs/promises';
import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { auditExportSinks } from '../config/audit-settings';
import { HOST_CONFIG, HostConfig } from '../config/host-config';
import { HOST_VERSION } from '../discovery/discovery.service';
import type { Resolver } from '../http/egress-guard';
import { rowsOf } from '../database/rows';
import { guardedPost } from '../http/guarded-post';
import type { LocalTaskHandle } from '../scheduler/local-task';
import { PeriodicTaskService } from '../scheduler/periodic-task.service';

/** What a sink receives for each sealed checkpoint (one JSON line of the file; the webhook's body). */
export interface AuditCheckpointRecord {
  type: 'openwop.audit.checkpoint';
  tenant: string;
  checkpoint: string;
  atSequence: number;
  /** The checkpoint before it in the tenant's chain (0 for the first): its leaves are the entries (prevAtSequence, atSequence]. */
  prevAtSequence: number;
  merkleRoot: string;
  signature: string;
  /** Which key signed it (the SHA-256 of its SPKI DER, first 32 hex digits). */
  keyFingerprint: string;
  sealedAt: string;
}

interface ClaimedExport {
  sink: 'file' | 'webhook';
  checkpoint: string;
  record: AuditCheckpointRecord;
  attempts: number;
}

const BATCH = 100;
const POLL_MS = 1000;
/** How long a claim holds a row before another replica may take it over. */
const LEASE_MS = 60_000;
const RETRY_BASE_MS = 1000;
const RETRY_MAX_MS = 300_000;
const MAX_ERROR = 300;

/** Writes the outbox rows of a checkpoint just sealed, in the sealing transaction (nothing when no sink is configured). */
export async function queueCheckpointExport(m: EntityManager, config: HostConfig, record: AuditCheckpointRecord): Promise<void> {
  for (const sink of auditExportSinks(config.audit)) {
    await m.query(`INSERT INTO "audit_checkpoint_export" ("sink", "checkpoint", "tenant", "record") VALUES ($1, $2, $3, $4)`, [sink, record.checkpoint, record.tenant, JSON.stringify(record)]);
  }
}

/**
 * Sends every sealed checkpoint to the configured sinks (OPENWOP_AUDIT_EXPORT_FILE: one JSON line
 * appended per checkpoint; OPENWOP_AUDIT_EXPORT_WEBHOOK_URL: one POST per checkpoint through the
 * egress guard), from the outbox the sealing transaction wrote, so the request that sealed it never
 * waits for a sink. Every replica that runs the scheduler polls the due rows with SKIP LOCKED; a
 * failure is retried with backoff up to five minutes apart, without limit: a checkpoint is never
 * dropped. Delivery is at least once (a line may repeat after a crash; its `checkpoint` id tells).
 */
@Injectable()
export class AuditCheckpointExporter implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('audit.export');
  private readonly sinks: Array<'file' | 'webhook'>;
  /** The outbox poll, on the platform scheduler: POLL_MS after the last pass. */
  private poll?: LocalTaskHandle;
  private running?: Promise<void>;
  /** Replaced by tests to resolve names without DNS. */
  resolver?: Resolver;

  constructor(
    private readonly ds: DataSource,
    @Inject(HOST_CONFIG) private readonly config: HostConfig,
    private readonly scheduler: PeriodicTaskService,
  ) {
    this.sinks = auditExportSinks(config.audit);
  }

  onApplicationBootstrap(): void {
    if (!this.sinks.length || !this.config.schedulerEnabled) return;
    this.poll = this.scheduler.every({
      name: 'audit.checkpoint-export',
      intervalMs: POLL_MS,
      cadence: 'delay',
      run: () => this.drain().catch((err) => this.logger.warn({ msg: 'audit checkpoint export pass failed; trying again', err })),
    });
  }

  async onApplicationShutdown(): Promise<void> {
    await this.poll?.stop();
    await this.running?.catch(() => undefined);
  }

  /** One pass: sends every due row of this replica's sinks (one pass at a time per process). Resolves how many were delivered. */
  drain(): Promise<number> {
    if (!this.sinks.length) return Promise.resolve(0);
    const pass = (this.running ?? Promise.resolve()).catch(() => undefined).then(() => this.pass());
    const current = pass.then(() => undefined);
    this.running = current;
    return pass;
  }

  private async pass(): Promise<number> {
    let delivered = 0;
    for (;;) {
      const rows = await this.claim();
      if (!rows.length) return delivered;
      const file = rows.filter((r) => r.sink === 'file');
      if (file.length) delivered += await this.toFile(file);
      for (const row of rows.filter((r) => r.sink === 'webhook')) delivered += await this.toWebhook(row);
      if (rows.length < BATCH) return delivered;
    }
  }

  /** Claims due rows: `attempts` counts this attempt and fences its outcome; the lease covers a crash mid-send. */
  private async claim(): Promise<ClaimedExport[]> {
    const rows = (await this.ds.query(
      `UPDATE "audit_checkpoint_export" e SET "attempts" = e."attempts" + 1, "next_attempt_at" = now() + make_interval(secs => $2::double precision / 1000)
        FROM (SELECT "sink", "checkpoint" FROM "audit_checkpoint_export" WHERE "sink" = ANY($1) AND "next_attempt_at" <= now()
               ORDER BY "created_at", "checkpoint" LIMIT ${BATCH} FOR UPDATE SKIP LOCKED) due
       WHERE e."sink" = due."sink" AND e."checkpoint" = due."checkpoint"
       RETURNING e."sink", e."checkpoint", e."record", e."attempts"`,
      [this.sinks, LEASE_MS],
    )) as unknown;
    const list = rowsOf<ClaimedExport>(rows);
    return list.sort((a, b) => (a.record.tenant < b.record.tenant ? -1 : a.record.tenant > b.record.tenant ? 1 : a.record.atSequence - b.record.atSequence));
  }

  private async toFile(rows: ClaimedExport[]): Promise<number> {
    const path = this.config.audit.exportFile!;
    try {
      const fh = await fs.open(path, 'a', 0o640);
      try {
        await fh.appendFile(rows.map((r) => `${JSON.stringify(r.record)}\n`).join(''));
        await fh.datasync();
      } finally {
        await fh.close();
      }
    } catch (e) {
      for (const row of rows) await this.failed(row, (e as NodeJS.ErrnoException).code ?? (e as Error).message);
      return 0;
    }
    for (const row of rows) await this.done(row);
    return rows.length;
  }

  private async toWebhook(row: ClaimedExport): Promise<number> {
    const outcome = await guardedPost(
      this.config.audit.exportWebhookUrl!,
      { 'content-type': 'application/json', 'user-agent': `openwop-host/${HOST_VERSION}`, 'x-openwop-audit-checkpoint': row.checkpoint },
      JSON.stringify(row.record),
      { allowPrivate: this.config.webhooks.allowPrivate, allowedPorts: this.config.webhooks.allowedPorts, timeoutMs: this.config.webhooks.timeoutMs, resolver: this.resolver },
    );
    if (outcome.ok) {
      await this.done(row);
      return 1;
    }
    await this.failed(row, outcome.error);
    return 0;
  }

  private async done(row: ClaimedExport): Promise<void> {
    await this.ds.query(`DELETE FROM "audit_checkpoint_export" WHERE "sink" = $1 AND "checkpoint" = $2 AND "attempts" = $3`, [row.sink, row.checkpoint, row.attempts]);
  }

  private async failed(row: ClaimedExport, error: string): Promise<void> {
    const delay = Math.min(RETRY_BASE_MS * 2 ** Math.min(row.attempts - 1, 20), RETRY_MAX_MS);
    this.logger.warn({ msg: 'audit checkpoint export failed; retrying', sink: row.sink, checkpoint: row.checkpoint, tenant: row.record.tenant, attempts: row.attempts, retryInMs: delay, error: error.slice(0, MAX_ERROR) });
    await this.ds.query(
      `UPDATE "audit_checkpoint_export" SET "last_error" = $4, "next_attempt_at" = now() + make_interval(secs => $5::double precision / 1000)
        WHERE "sink" = $1 AND "checkpoint" = $2 AND "attempts" = $3`,
      [row.sink, row.checkpoint, row.attempts, error.slice(0, MAX_ERROR), delay],
    );
  }
}
