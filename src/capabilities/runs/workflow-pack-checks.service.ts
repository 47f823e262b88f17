import { Injectable, OnModuleInit } from '@nestjs/common';
import { ArtifactInstallCheck, InstallChecks, InstallProblem, Installer } from '../../platform/artifacts/install-checks';
import { ToolCatalogService } from '../tool-catalog';
import { chainPackProblems, NodeConfigProblem, StructuredConfigCheck } from './chain-pack-checks';
import { NodeExecutorRegistry } from './engine/node-executor-registry.service';
import { WorkflowResolver } from './workflow-resolver.service';

/** The registry kind of workflow-chain packs. */
const WORKFLOW_CHAIN_PACK = 'workflow-chain-pack';

/**
 * Checks a workflow-chain pack against what this host executes before any install path installs it
 * (a direct install, a proposal's activation, a bundle import): the node executors registered here,
 * the tool catalog of the scope it is installed in, the DAG and its templates. Registered with the platform's
 * `InstallChecks`, so the install paths never import the run engine.
 */
@Injectable()
export class WorkflowPackChecks implements ArtifactInstallCheck, OnModuleInit {
  constructor(
    private readonly checks: InstallChecks,
    private readonly executors: NodeExecutorRegistry,
    private readonly catalog: ToolCatalogService,
    private readonly resolver: WorkflowResolver,
  ) {}

  onModuleInit(): void {
    this.checks.register(WORKFLOW_CHAIN_PACK, this);
  }

  /** The catalog of the installer's scope, loaded (it is read through sources on connections of their own). */
  async prepare(installer: Installer): Promise<void> {
    await this.catalog.load({ tenant: installer.tenant, workspace: installer.workspace });
  }

  async check(content: Record<string, unknown>, installer: Installer): Promise<InstallProblem[]> {
    const scope = { tenant: installer.tenant, workspace: installer.workspace };
    return chainPackProblems(content, {
      nodeProblems: (typeId, config) => {
        const ex = this.executors.get(typeId);
        if (!ex) return undefined;
        const structured = ex.provider as Partial<StructuredConfigCheck>;
        if (typeof structured.configProblems === 'function') return structured.configProblems(config);
        return (ex.provider.validateConfig?.(config) ?? []).map((message): NodeConfigProblem => ({ path: '', code: 'invalid_node_config', message }));
      },
      callsTool: (typeId) => this.executors.get(typeId)?.typeId === 'core.tool',
      // The catalog of the scope the pack is installed in, whoever may call the tool: installing a
      // chain delegates nothing (a run acts with its starter's scopes, checked when it is started),
      // so the installer need not hold the scopes of the tools it calls.
      toolVisible: async (toolId) => (await this.catalog.descriptorOf(scope, toolId)) !== undefined,
      childWorkflow: (typeId, config) => (this.executors.get(typeId)?.typeId === 'core.subWorkflow' ? String(config.workflowId ?? config.childWorkflowId ?? '') || undefined : undefined),
      workflowVisible: async (workflowId) => (await this.resolver.describe(scope, workflowId)) !== undefined,
    });
  }
}
