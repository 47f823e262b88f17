import { Injectable } from '@nestjs/common';
import { ArtifactInstaller, ArtifactInstallerProvider, ArtifactViolation, InstalledArtifact, InstallScope } from '@openwop-host/plugin-sdk';
import type { EntityManager } from 'typeorm';
import type { QueryDeepPartialEntity } from 'typeorm/query-builder/QueryPartialEntity';
import { RUN_CREATE_SCOPE, RunLauncherRegistry } from '../../../platform/run-ports/run-launcher';
import { AutomationScheduleEntity } from './automation-schedule.entity';
import { AutomationSpec, nextRunAfter, validateAutomation } from './automation-spec';

/**
 * Installs automations (named scheduled jobs). Installing writes the schedule row in the same
 * transaction as the registry bytes; uninstalling removes it. `enabled: false` installs the
 * automation without arming it (portability imports automations disabled).
 */
@Injectable()
@ArtifactInstaller({ kind: 'automation' })
export class AutomationInstaller implements ArtifactInstallerProvider {
  constructor(private readonly launchers: RunLauncherRegistry) {}

  validate(content: Record<string, unknown>): ArtifactViolation[] {
    return validateAutomation(content);
  }

  /** A `start-run` automation starts runs as its installer: what a run of its workflow needs. */
  async requiredScopes(content: Record<string, unknown>, scope: InstallScope): Promise<string[]> {
    const action = (content as unknown as Partial<AutomationSpec>).action;
    if (!action || typeof action.workflowId !== 'string') return [RUN_CREATE_SCOPE];
    const launcher = this.launchers.get();
    return launcher ? launcher.requiredScopes({ tenant: scope.tenant, workspace: scope.workspace }, action.workflowId) : [RUN_CREATE_SCOPE];
  }

  identify(content: Record<string, unknown>): { name: string; version?: string } {
    return { name: String(content.name), version: typeof content.version === 'string' ? content.version : undefined };
  }

  async afterInstall(artifact: InstalledArtifact, scope: InstallScope, tx: unknown): Promise<void> {
    const m = tx as EntityManager;
    const spec = artifact.content as unknown as AutomationSpec;
    const enabled = spec.enabled !== false;
    const [{ now }] = (await m.query('SELECT now() AS now')) as Array<{ now: Date }>;
    const row = {
      tenant: scope.tenant,
      workspaceKey: artifact.workspace ?? '',
      name: artifact.name,
      artifactRef: artifact.ref,
      cron: 'cron' in spec.schedule ? spec.schedule.cron : null,
      timezone: 'cron' in spec.schedule ? (spec.schedule.timezone ?? null) : null,
      intervalMs: 'intervalMs' in spec.schedule ? spec.schedule.intervalMs : null,
      action: spec.action as unknown as Record<string, unknown>,
      enabled,
      nextRunAt: enabled ? nextRunAfter(spec.schedule, new Date(now)) : null,
      installedBy: scope.principal,
      delegatedScopes: scope.delegation ? [...scope.delegation.scopes] : null,
      delegatedKeyId: scope.delegation?.keyId ?? null,
    };
    await m.getRepository(AutomationScheduleEntity).upsert(row as QueryDeepPartialEntity<AutomationScheduleEntity>, ['tenant', 'workspaceKey', 'name']);
  }

  async afterUninstall(artifact: InstalledArtifact, scope: InstallScope, tx: unknown): Promise<void> {
    await (tx as EntityManager)
      .getRepository(AutomationScheduleEntity)
      .delete({ tenant: scope.tenant, workspaceKey: artifact.workspace ?? '', name: artifact.name });
  }
}
