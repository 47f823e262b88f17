import { Injectable } from '@nestjs/common';
import { NodeExecutionContext, NodeExecutionError, NodeExecutionResult, NodeExecutor, NodeExecutorProvider } from '@openwop-host/plugin-sdk';
import { DomainError } from '../../../platform/errors/domain-error';
import type { Principal } from '../../../platform/identity/principal';
import { RunLauncher } from '../run-launcher.service';
import { CapabilityToggles, usesInputMapping } from '../seams/capability-toggles';
import { attestationConfig, attestationOf, attestationProblems, mergesAfter } from './subrun-attestation';

const FAILURE_POLICIES = ['fail-parent', 'absorb'];

function isStringMap(v: unknown): v is Record<string, string> {
  return !!v && typeof v === 'object' && !Array.isArray(v) && Object.values(v).every((x) => typeof x === 'string' && x.length > 0);
}

function childWorkflowOf(config: Record<string, unknown>): string | undefined {
  const id = config.workflowId ?? config.childWorkflowId;
  return typeof id === 'string' && id ? id : undefined;
}

/**
 * `core.subWorkflow` (alias `core.control.subWorkflow`; node-packs.md §"`core.subWorkflow` contract"):
 * starts a child run of `workflowId` for the run's principal and waits for its terminal status.
 *
 * - The child carries `parentRunId` / `parentNodeId` (kept in its row); the parent lists it in `childRuns[]`.
 * - `inputMapping {childVar: parentVar}` seeds the child's variables once, at create time, over its
 *   declared defaults (an unset parent variable seeds nothing); `inputs` become the child's run inputs.
 * - On `completed`, `outputMapping {parentVar: childVar}` copies each defined child variable into the
 *   parent's variables (written as this node's `outputs.variables`); the node's outputs always carry
 *   `childRunId` and `childStatus`, and `childOutputs` (the child's run outputs) when it completed.
 * - `onChildFailure`: `fail-parent` (default) fails the node with the child's error; `absorb` completes it.
 * - Cancelling the parent cancels the child (`propagateCancellation`, default true; the cancel
 *   itself also cascades in the database, so a parent cancelled while nobody executes it does too).
 * - `outputAttestation` (RFC 0063): `checksum` adds `outputs.attestation {checksum, algorithm: "sha256"}` over the
 *   child's outputs (JCS + SHA-256) before anything is merged; `requireApproval` opens an approval gate on the parent
 *   first, and only a grant merges (`outputs.merged`); a rejection completes the node without the harvest.
 * - Restart-safe: a node executed again (its replica stopped, the run was paused) finds the child it
 *   started instead of starting another, and waits on it again.
 */
@Injectable()
@NodeExecutor({ typeId: 'core.subWorkflow', replayPolicy: 'non-deterministic' })
export class CoreSubWorkflowExecutor implements NodeExecutorProvider {
  constructor(
    private readonly launcher: RunLauncher,
    private readonly toggles: CapabilityToggles,
  ) {}

  validateConfig(config: Record<string, unknown>): string[] {
    const problems: string[] = [];
    if (!childWorkflowOf(config)) problems.push('core.subWorkflow needs config.workflowId (the child workflow)');
    if (config.waitForCompletion !== undefined && config.waitForCompletion !== true) problems.push('core.subWorkflow config.waitForCompletion: only true (blocking) is supported');
    if (config.onChildFailure !== undefined && !FAILURE_POLICIES.includes(config.onChildFailure as string)) problems.push('core.subWorkflow config.onChildFailure must be "fail-parent" or "absorb"');
    for (const k of ['inputMapping', 'outputMapping'] as const) {
      if (config[k] !== undefined && !isStringMap(config[k])) problems.push(`core.subWorkflow config.${k} must map variable names to variable names`);
    }
    if (!this.toggles.enabled('subWorkflow.inputMapping') && usesInputMapping({ nodes: [{ typeId: 'core.subWorkflow', config }] })) {
      problems.push('core.subWorkflow config.inputMapping needs the subWorkflow.inputMapping capability, which this host does not advertise now');
    }
    problems.push(...attestationProblems(config.outputAttestation));
    if (config.propagateCancellation !== undefined && typeof config.propagateCancellation !== 'boolean') problems.push('core.subWorkflow config.propagateCancellation must be a boolean');
    if (config.inputs !== undefined && (typeof config.inputs !== 'object' || config.inputs === null || Array.isArray(config.inputs)) && !/^\{\{[^{}]+\}\}$/.test(String(config.inputs))) {
      problems.push('core.subWorkflow config.inputs must be an object');
    }
    return problems;
  }

  /** The child chain's needs are the parent's (its starter acts for it). */
  async requiredScopesOf(config: Record<string, unknown>): Promise<{ scopes: string[]; childWorkflows: string[] }> {
    const child = childWorkflowOf(config);
    return { scopes: [], childWorkflows: child ? [child] : [] };
  }

  async execute(ctx: NodeExecutionContext): Promise<NodeExecutionResult> {
    const workflowId = childWorkflowOf(ctx.config)!;
    const principal: Principal = { tenant: ctx.principal.tenant, workspace: ctx.principal.workspace, principal: ctx.principal.principal, scopes: ctx.principal.scopes, kind: 'system' };
    let childRunId = (await this.launcher.childOf(principal, ctx.runId, ctx.nodeId))?.runId;
    if (!childRunId) childRunId = await this.start(ctx, principal, workflowId);
    const done = await this.launcher.awaitTerminal(principal, childRunId, ctx.signal, { resumable: true, cancel: ctx.config.propagateCancellation !== false });
    const costUsd = done.metrics?.openwopCost.usd ?? 0;
    // Stopped here before the child ended (shutdown, lease, pause): the node is executed again later.
    if (ctx.signal.aborted && done.status !== 'completed') throw Object.assign(new NodeExecutionError('node_aborted', 'The node stopped before its child run ended.'), { costUsd });
    const outputs: Record<string, unknown> = { childRunId, childStatus: done.status };
    if (done.status === 'completed') {
      outputs.childOutputs = done.outputs ?? {};
      // RFC 0063: the checksum of the harvested outputs, then (when asked) an approval before anything is merged.
      const attest = attestationConfig(ctx.config.outputAttestation);
      if (attest?.checksum) outputs.attestation = attestationOf(outputs.childOutputs as Record<string, unknown>);
      if (attest?.requireApproval) {
        const decision = await ctx.awaitApproval({ title: `Merge the outputs of child run ${childRunId} (${workflowId})?`, artifactType: 'subrun-outputs' });
        outputs.merged = mergesAfter(attest, decision === 'granted' ? 'accept' : 'reject');
        if (!outputs.merged) return { outputs, ...(costUsd ? { costUsd } : {}) };
      }
      const harvested: Record<string, unknown> = {};
      const childVars = done.variables ?? {};
      for (const [parentVar, childVar] of Object.entries((ctx.config.outputMapping as Record<string, string> | undefined) ?? {})) {
        // A child variable that is not set leaves the parent's as it is.
        if (childVar !== 'inputs' && childVars[childVar] !== undefined) harvested[parentVar] = childVars[childVar];
      }
      if (Object.keys(harvested).length) outputs.variables = harvested;
      return { outputs, ...(costUsd ? { costUsd } : {}) };
    }
    const childError = done.error ?? { code: `child_run_${done.status}`, message: `Child run ${childRunId} ended ${done.status}.` };
    if (ctx.config.onChildFailure === 'absorb') return { outputs: { ...outputs, childError }, ...(costUsd ? { costUsd } : {}) };
    throw Object.assign(new NodeExecutionError(childError.code, `Child run ${childRunId} of ${workflowId} ended ${done.status}: ${childError.message}`), { costUsd });
  }

  private async start(ctx: NodeExecutionContext, principal: Principal, workflowId: string): Promise<string> {
    const seeds: Record<string, unknown> = {};
    const mapping = ctx.config.inputMapping as Record<string, string> | undefined;
    if (mapping && Object.keys(mapping).length) {
      const parentVars = (await this.launcher.variablesOf(principal, ctx.runId)) ?? {};
      // One-shot fold: the parent's variables as they are now; an unset one seeds nothing (never null).
      for (const [childVar, parentVar] of Object.entries(mapping)) if (parentVars[parentVar] !== undefined && parentVar !== 'inputs') seeds[childVar] = parentVars[parentVar];
    }
    const inputs = ctx.config.inputs && typeof ctx.config.inputs === 'object' && !Array.isArray(ctx.config.inputs) ? (ctx.config.inputs as Record<string, unknown>) : {};
    try {
      return await this.launcher.startChild(principal, workflowId, inputs, ctx.runId, { nodeId: ctx.nodeId, variables: seeds });
    } catch (e) {
      if (e instanceof DomainError && e.status === 404) throw new NodeExecutionError('unknown_child_workflow', `No workflow "${workflowId}" is installed for the run's tenant.`);
      if (e instanceof DomainError) throw new NodeExecutionError(e.code, e.message);
      throw e;
    }
  }
}
