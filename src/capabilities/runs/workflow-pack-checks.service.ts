import { Injectable, OnModuleInit } from '@nestjs/common';
import { ArtifactInstallCheck, InstallChecks, InstallProblem, Installer } from '../../platform/artifacts/install-checks';
import { DomainError } from '../../platform/errors/domain-error';
import { ToolCatalogService } from '../tool-catalog/tool-catalog.service';
import { chainPackProblems } from './chain-pack-checks';
import { NodeExecutorRegistry } from './node-executor-registry.service';

/** The registry kind of workflow-chain packs. */
const WORKFLOW_CHAIN_PACK = 'workflow-chain-pack';

/**
 * Checks a workflow-chain pack against what this host executes before any install path installs it
 * (a direct install, a proposal's activation, a bundle import): the node executors registered here,
 * the installer's tool catalog, the DAG and its templates. Registered with the platform's
 * `InstallChecks`, so the install paths never import the run engine.
 */
@Injectable()
export class WorkflowPackChecks implements ArtifactInstallCheck, OnModuleInit {
  constructor(
    private readonly checks: InstallChecks,
    private readonly executors: NodeExecutorRegistry,
    private readonly catalog: ToolCatalogService,
  ) {}

  onModuleInit(): void {
    this.checks.register(WORKFLOW_CHAIN_PACK, this);
  }

  async check(content: Record<string, unknown>, installer: Installer): Promise<InstallProblem[]> {
    const principal = { tenant: installer.tenant, workspace: installer.workspace, principal: installer.principal, scopes: new Set(installer.scopes), kind: 'system' as const };
    return chainPackProblems(content, {
      nodeProblems: (typeId, config) => {
        const ex = this.executors.get(typeId);
        return ex ? (ex.provider.validateConfig?.(config) ?? []) : undefined;
      },
      callsTool: (typeId) => this.executors.get(typeId)?.typeId === 'core.tool',
      toolVisible: async (toolId) => {
        try {
          await this.catalog.entry(principal, toolId);
          return true;
        } catch (e) {
          if (e instanceof DomainError && e.status === 404) return false;
          throw e;
        }
      },
    });
  }
}
