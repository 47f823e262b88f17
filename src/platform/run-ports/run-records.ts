import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { WiringFault } from '../errors/internal-fault';
import type { Principal, TenantScope } from '../identity/principal';
import type { Subject } from '../identity/subject';

/** A run as the platform and the capabilities that record runs see it (not the run engine's full snapshot). */
export interface RunView {
  runId: string;
  kind: string;
  status: string;
  owner: { tenant: string; workspace?: string; principal?: string };
  createdAt: string;
  metadata: Record<string, unknown>;
}

/**
 * The run facts the platform and other capabilities ask for, and the runs they record themselves
 * (tool sessions, automations, the credential-echo seam): the run rows are the runs capability's,
 * which implements this (its RunService) and registers it with RunRecordsPort.
 */
export interface RunRecords {
  /** Records a run of `kind` for the principal (status `running`), inside `manager`'s transaction when given. */
  create(principal: Principal, kind: string, metadata?: Record<string, unknown>, manager?: EntityManager): Promise<RunView>;
  setStatus(scope: TenantScope, runId: string, status: string, manager?: EntityManager): Promise<void>;
  /** The statuses of a tenant's runs by id (ids of other tenants, or of no run, are absent). */
  statuses(scope: TenantScope, runIds: readonly string[]): Promise<Map<string, string>>;
  /** A run of the caller's tenant (and workspace), or undefined: never another tenant's. */
  find(scope: TenantScope, runId: string): Promise<RunView | undefined>;
  /** The owner subjects of a tenant's runs by id, as recorded at creation (legacy for runs created before; other tenants' ids are absent). */
  subjects(scope: TenantScope, runIds: readonly string[]): Promise<Map<string, Subject>>;
}

/**
 * The port through which the platform (the events controller) and the capabilities that cannot or
 * need not import the runs capability reach its run rows. The platform declares it and never
 * reads the `run` table; the runs capability registers its implementation at module init.
 */
@Injectable()
export class RunRecordsPort implements RunRecords {
  private impl?: RunRecords;

  register(impl: RunRecords): void {
    if (this.impl && this.impl !== impl) throw new WiringFault('run records: a second implementation registered');
    this.impl = impl;
  }

  private get runs(): RunRecords {
    if (!this.impl) throw new WiringFault('run records: the runs capability is not mounted');
    return this.impl;
  }

  create(principal: Principal, kind: string, metadata?: Record<string, unknown>, manager?: EntityManager): Promise<RunView> {
    return this.runs.create(principal, kind, metadata, manager);
  }

  setStatus(scope: TenantScope, runId: string, status: string, manager?: EntityManager): Promise<void> {
    return this.runs.setStatus(scope, runId, status, manager);
  }

  statuses(scope: TenantScope, runIds: readonly string[]): Promise<Map<string, string>> {
    return this.runs.statuses(scope, runIds);
  }

  find(scope: TenantScope, runId: string): Promise<RunView | undefined> {
    return this.runs.find(scope, runId);
  }

  subjects(scope: TenantScope, runIds: readonly string[]): Promise<Map<string, Subject>> {
    return this.runs.subjects(scope, runIds);
  }
}
