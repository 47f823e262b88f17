import { Injectable, OnModuleInit } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import type { Principal, TenantScope } from '../../platform/identity/principal';
import { legacySubject, readSubject, type Subject } from '../../platform/identity/subject';
import { RunRecords, RunRecordsPort, RunView } from '../../platform/run-ports/run-records';
import { inScope } from '../../platform/tenancy/workspace-scope';
import { RunEntity } from './run.entity';
import { principalSelect } from './run-principal.entity';
import { newRunId } from './engine/run-id';

/**
 * Runs the host records without executing them (tool sessions, goal iterations, automations...),
 * tenant-owned, and the run facts the platform asks for: the runs capability's implementation of
 * the platform's RunRecords port (registered with RunRecordsPort), beside RunsService, the run API.
 */
@Injectable()
export class RunService implements RunRecords, OnModuleInit {
  constructor(
    private readonly ds: DataSource,
    private readonly port: RunRecordsPort,
  ) {}

  onModuleInit(): void {
    this.port.register(this);
  }

  async create(principal: Principal, kind: string, metadata: Record<string, unknown> = {}, manager?: EntityManager): Promise<RunView> {
    const repo = (manager ?? this.ds.manager).getRepository(RunEntity);
    const run = await repo.save(
      repo.create({ id: newRunId(), tenant: principal.tenant, workspace: principal.workspace ?? null, workspaceKey: principal.workspace ?? '', principal: principal.principal, kind, status: 'running', metadata }),
    );
    return toView(run);
  }

  async setStatus(scope: TenantScope, runId: string, status: string, manager?: EntityManager): Promise<void> {
    await (manager ?? this.ds.manager).getRepository(RunEntity).update({ id: runId, tenant: scope.tenant }, { status });
  }

  /** The statuses of a tenant's runs by id (ids of other tenants, or of no run, are absent). */
  async statuses(scope: TenantScope, runIds: readonly string[]): Promise<Map<string, string>> {
    const ids = runIds.filter((id) => UUID_TEXT.test(id));
    const found = new Map<string, string>();
    if (!ids.length) return found;
    for (const r of (await this.ds.query(`SELECT "id", "status" FROM "run" WHERE "tenant" = $1 AND "id" = ANY($2::uuid[])`, [scope.tenant, ids])) as Array<{ id: string; status: string }>) {
      found.set(r.id, r.status);
    }
    return found;
  }

  /** The owner subjects of a tenant's runs (recorded at creation, stored with the starter's scopes in `run_principal`; legacy before). */
  async subjects(scope: TenantScope, runIds: readonly string[]): Promise<Map<string, Subject>> {
    const ids = runIds.filter((id) => UUID_TEXT.test(id));
    const found = new Map<string, Subject>();
    if (!ids.length) return found;
    const rows = (await this.ds.query(`SELECT "id", "principal", (${principalSelect('"run"', 'subject')}) AS "subject" FROM "run" WHERE "tenant" = $1 AND "id" = ANY($2::uuid[])`, [scope.tenant, ids])) as Array<{ id: string; principal: string | null; subject: unknown }>;
    for (const r of rows) found.set(r.id, readSubject(r.subject) ?? legacySubject(scope.tenant, r.principal ?? undefined));
    return found;
  }

  /** A run of the caller's tenant (and workspace), or undefined: never another tenant's. */
  async find(scope: TenantScope, runId: string): Promise<RunView | undefined> {
    if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(runId)) return undefined;
    const run = await this.ds.getRepository(RunEntity).findOne({ where: inScope(scope, { id: runId }) });
    return run ? toView(run) : undefined;
  }
}

const UUID_TEXT = /^[0-9a-f-]{36}$/i;

function toView(r: RunEntity): RunView {
  return {
    runId: r.id,
    kind: r.kind,
    status: r.status,
    owner: { tenant: r.tenant, workspace: r.workspace ?? undefined, principal: r.principal ?? undefined },
    createdAt: r.createdAt.toISOString(),
    metadata: r.metadata,
  };
}
