import { Inject, Injectable, OnModuleInit } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { NotFoundError, ValidationError } from '../../../platform/errors/domain-error';
import { HOST_CONFIG, HostConfig } from '../../../platform/config/host-config';
import type { Principal, TenantScope } from '../../../platform/identity/principal';
import { NodeExecutorRegistry } from '../engine/node-executor-registry.service';
import { RunCreationService } from '../run-creation.service';
import { findRun } from '../run-snapshot';
import type { RunEntity } from '../run.entity';
import type { DeadLetterSink } from './node-retry';

/** A dead-lettered run as the dead-letter API names it: the failure, never the run's inputs or outputs. */
export interface DeadLetterView {
  runId: string;
  workflowId: string | null;
  status: string;
  nodeId: string;
  reason: string;
  attempts: number;
  deadLetteredAt: string;
  expiresAt: string;
  retriedRunIds: string[];
}

interface Letter {
  nodeId: string;
  reason: string;
  attempts: number;
  deadLetteredAt: string;
  retriedRunIds?: string[];
}

export const DEAD_LETTER_PAGE = 100;

/**
 * The RFC 0053 run dead-letter sink: a run whose node exhausted its retry policy (node-retry.ts) is marked in
 * the run's own row (`metadata.deadLetter`), so it stays a whole, fork-eligible run for as long as runs are
 * kept (`retentionDays` = OPENWOP_RUN_RETENTION_DAYS; the run retention deletes it with its mark). The sink is
 * listed and read per tenant (and workspace), retried (a new run of the same workflow, inputs and
 * configurable) and purged (the mark removed; the run itself stays in the history).
 */
@Injectable()
export class DeadLettersService implements DeadLetterSink, OnModuleInit {
  constructor(
    private readonly ds: DataSource,
    private readonly creation: RunCreationService,
    private readonly executors: NodeExecutorRegistry,
    @Inject(HOST_CONFIG) private readonly config: HostConfig,
  ) {}

  onModuleInit(): void {
    this.executors.useDeadLetterSink(this);
  }

  get retentionDays(): number {
    return this.config.retention.runDays;
  }

  async record(ctx: { runId: string; principal: TenantScope }, letter: { nodeId: string; reason: string; attempts: number }): Promise<void> {
    const value: Letter = { ...letter, deadLetteredAt: new Date().toISOString() };
    await this.ds.query(`UPDATE "run" SET "metadata" = jsonb_set(coalesce("metadata", '{}'::jsonb), '{deadLetter}', $2::jsonb) WHERE "id" = $1 AND "tenant" = $3`, [ctx.runId, JSON.stringify(value), ctx.principal.tenant]);
  }

  /** The sink of the caller's scope, newest first; `cursor` is the previous page's `nextCursor`. */
  async list(p: TenantScope, q: { limit?: number; cursor?: string; workflowId?: string }): Promise<{ deadLetters: DeadLetterView[]; nextCursor: string | null }> {
    const limit = Math.min(Math.max(q.limit ?? 50, 1), DEAD_LETTER_PAGE);
    const params: unknown[] = [p.tenant];
    let where = `"tenant" = $1 AND "metadata" ? 'deadLetter'`;
    if (p.workspace) where += ` AND "workspace" = $${params.push(p.workspace)}`;
    if (q.workflowId) where += ` AND "workflow_id" = $${params.push(q.workflowId)}`;
    if (q.cursor) {
      const [at, id] = Buffer.from(q.cursor, 'base64url').toString('utf8').split('|');
      if (!at || !id || Number.isNaN(Date.parse(at)) || !/^[0-9a-f-]{36}$/.test(id)) throw new ValidationError('cursor is not a cursor of this list.', { field: 'cursor' });
      where += ` AND ("metadata"->'deadLetter'->>'deadLetteredAt', "id"::text) < ($${params.push(at)}, $${params.push(id)})`;
    }
    const rows = (await this.ds.query(
      `SELECT "id", "workflow_id" AS "workflowId", "status", "metadata"->'deadLetter' AS "letter" FROM "run" WHERE ${where}
       ORDER BY "metadata"->'deadLetter'->>'deadLetteredAt' DESC, "id"::text DESC LIMIT $${params.push(limit + 1)}`,
      params,
    )) as Array<{ id: string; workflowId: string | null; status: string; letter: Letter }>;
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    return {
      deadLetters: page.map((r) => this.view(r.id, r.workflowId, r.status, r.letter)),
      nextCursor: rows.length > limit && last ? Buffer.from(`${last.letter.deadLetteredAt}|${last.id}`, 'utf8').toString('base64url') : null,
    };
  }

  async get(p: TenantScope, runId: string): Promise<DeadLetterView> {
    const { run, letter } = await this.find(p, runId);
    return this.view(run.id, run.workflowId, run.status, letter);
  }

  /** A new run of the dead-lettered run's workflow with its inputs and configurable, recorded on the letter. */
  async retry(p: Principal, runId: string): Promise<{ deadLetter: DeadLetterView; runId: string }> {
    const { run } = await this.find(p, runId);
    if (!run.workflowId) throw new ValidationError('This dead-lettered run names no workflow to run again.', { runId });
    const { snapshot } = await this.creation.create(p, { workflowId: run.workflowId, inputs: run.inputs ?? {}, configurable: run.configurable ?? {} });
    await this.ds.query(
      `UPDATE "run" SET "metadata" = jsonb_set("metadata", '{deadLetter,retriedRunIds}', coalesce("metadata"->'deadLetter'->'retriedRunIds', '[]'::jsonb) || to_jsonb($2::text)) WHERE "id" = $1 AND "metadata" ? 'deadLetter'`,
      [run.id, snapshot.runId],
    );
    return { deadLetter: await this.get(p, runId), runId: snapshot.runId };
  }

  /** Removes the run from the sink (the run itself stays until the run retention deletes it). */
  async purge(p: TenantScope, runId: string): Promise<void> {
    const { run } = await this.find(p, runId);
    await this.ds.query(`UPDATE "run" SET "metadata" = "metadata" - 'deadLetter' WHERE "id" = $1`, [run.id]);
  }

  private async find(p: TenantScope, runId: string): Promise<{ run: RunEntity; letter: Letter }> {
    const run = await findRun(this.ds.manager, p, runId);
    const letter = run?.metadata?.deadLetter as Letter | undefined;
    if (!run || !letter) throw new NotFoundError('No such dead-lettered run.');
    return { run, letter };
  }

  private view(runId: string, workflowId: string | null, status: string, l: Letter): DeadLetterView {
    const expires = new Date(Date.parse(l.deadLetteredAt) + this.retentionDays * 86_400_000).toISOString();
    return { runId, workflowId, status, nodeId: l.nodeId, reason: l.reason, attempts: l.attempts, deadLetteredAt: l.deadLetteredAt, expiresAt: expires, retriedRunIds: l.retriedRunIds ?? [] };
  }
}
