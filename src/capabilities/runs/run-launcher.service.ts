import { Injectable, OnModuleInit } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { RUN_CREATE_SCOPE, RunLauncherRegistry, WorkflowRunLauncher } from '../../platform/run-ports/run-launcher';
import { requireDelegable } from '../../platform/identity/delegation';
import type { Principal, TenantScope } from '../../platform/identity/principal';
import { NodeExecutorRegistry } from './engine/node-executor-registry.service';
import { RunEngineService } from './engine/run-engine.service';
import { parseDefinition, WorkflowDefinition } from './workflow-definition';
import { WorkflowResolver } from './workflow-resolver.service';
import { CreateRunRequest, HOST_KEY_PREFIX, RunCreationService } from './run-creation.service';
import { findRun, RunSnapshot, TERMINAL } from './run-snapshot';
import { RunsService } from './runs.service';
import { RunNodeEntity } from './run-node.entity';
import { childRunsOf, ChildRunView, runVariables } from './run-variables';

/**
 * Every node type a run of `definition` may execute, with its config as far as it is known before the run (what
 * `requiredScopes` works a run's authority out from): each node as declared, and each node's inverse action (RFC 0151
 * `compensation`), which an unwind executes with its resolved `inputMapping` as its config, so the mapping stands in
 * for the config here (its `${...}` references as written). Child chains are not expanded here: sub-chain refs are
 * `workflowId`s already (the resolver rewrote them), and the chains a node starts (a `core.subWorkflow`, a
 * `workflow:` tool) are what its executor's `requiredScopesOf` names.
 */
function declaredNodes(definition: WorkflowDefinition): Array<{ typeId: string; config: Record<string, unknown> }> {
  const out: Array<{ typeId: string; config: Record<string, unknown> }> = [];
  for (const n of definition.nodes) {
    out.push({ typeId: n.typeId, config: n.config });
    if (n.compensation) out.push({ typeId: n.compensation.nodeTypeId, config: n.compensation.inputMapping });
  }
  return out;
}

/** Most chains one run's authority is worked out over (a chain calling chains calling chains...). */
const MAX_CHAINS = 100;

/**
 * Starting runs on another's behalf: the platform's `WorkflowRunLauncher` (automations, goal
 * workers, tool sessions launch through the `RunLauncherRegistry` it registers with), the scopes a
 * chain needs, and the child runs of a `workflow` tool (`core.tool`), which it waits on.
 */
@Injectable()
export class RunLauncher implements OnModuleInit, WorkflowRunLauncher {
  constructor(
    private readonly launchers: RunLauncherRegistry,
    private readonly ds: DataSource,
    private readonly resolver: WorkflowResolver,
    private readonly executors: NodeExecutorRegistry,
    private readonly engine: RunEngineService,
    private readonly creation: RunCreationService,
    private readonly runs: RunsService,
  ) {}

  onModuleInit(): void {
    this.launchers.register(this);
  }

  async launch(principal: Principal, req: CreateRunRequest, opts: { idempotencyKey?: string; manager?: EntityManager; recordRefusal?: boolean } = {}): Promise<{ runId: string }> {
    // A key the host minted (a goal iteration, an automation slot) lives in a keyspace no caller's
    // Idempotency-Key can reach (idempotency.md §"Keyspace separation"): see HOST_KEY_PREFIX.
    const key = opts.idempotencyKey === undefined ? undefined : `${HOST_KEY_PREFIX}${opts.idempotencyKey}`;
    const { snapshot } = await this.creation.create(principal, req, key, undefined, opts.manager, { recordRefusal: opts.recordRefusal, requireCreateScope: true, hostKey: true });
    return { runId: snapshot.runId };
  }

  async requiredScopes(scope: TenantScope, workflowId: string, manager?: EntityManager): Promise<string[]> {
    const needed = new Set<string>([RUN_CREATE_SCOPE]);
    const seen = new Set<string>();
    const queue = [workflowId];
    // Chains calling chains: each once (cycles and diamonds included), at most MAX_CHAINS of them.
    while (queue.length && seen.size < MAX_CHAINS) {
      const wf = queue.shift()!;
      if (seen.has(wf)) continue;
      seen.add(wf);
      const dag = await this.resolver.resolve(scope, wf, manager ?? this.ds.manager);
      const definition = dag ? parseDefinition(wf, dag).definition : undefined;
      // The nodes and the inverse actions an unwind would execute (declaredNodes): an inverse action acts
      // with the run's scopes as a forward node does, so what it needs is delegated (or refused) now, not found missing mid-unwind.
      for (const n of definition ? declaredNodes(definition) : []) {
        const needs = await this.executors.get(n.typeId)?.provider.requiredScopesOf?.(n.config, { tenant: scope.tenant, workspace: scope.workspace });
        for (const s of needs?.scopes ?? []) needed.add(s);
        for (const child of needs?.childWorkflows ?? []) if (!seen.has(child)) queue.push(child);
      }
    }
    return [...needed].sort();
  }

  start(runId: string): void {
    this.engine.kick(runId);
  }

  async status(scope: TenantScope, runId: string): Promise<{ status: string; outputs?: Record<string, unknown>; error?: { code: string; message: string }; costUsd?: number } | undefined> {
    const run = await findRun(this.ds.manager, scope, runId);
    if (!run) return undefined;
    return { status: run.status, ...(run.outputs ? { outputs: run.outputs } : {}), ...(run.error ? { error: run.error } : {}), costUsd: run.costUsd };
  }

  /**
   * A child run of a `workflow` tool (same principal, no idempotency key). The child acts for the
   * parent's principal, so that principal must hold everything the child chain needs
   * (`requiredScopes`): otherwise 403 `forbidden` with `details.requiredScopes`, and no child run.
   */
  async startChild(
    principal: Principal,
    workflowId: string,
    inputs: Record<string, unknown>,
    parentRunId: string,
    child: { nodeId?: string; variables?: Record<string, unknown> } = {},
  ): Promise<string> {
    requireDelegable(principal, await this.requiredScopes(principal, workflowId), `A child run of "${workflowId}"`);
    return (await this.creation.create(principal, { workflowId, inputs }, undefined, parentRunId, undefined, { requireCreateScope: true, child })).snapshot.runId;
  }

  /** The child run a node of a parent run started (the latest), found in the database: what a restarted node waits on again. */
  async childOf(scope: TenantScope, parentRunId: string, parentNodeId: string): Promise<ChildRunView | undefined> {
    return (await childRunsOf(this.ds.manager, scope, parentRunId, parentNodeId)).at(-1);
  }

  /** A run's variables as stored now (run-variables.ts); undefined when the scope has no such run. */
  async variablesOf(scope: TenantScope, runId: string): Promise<Record<string, unknown> | undefined> {
    const run = await findRun(this.ds.manager, scope, runId);
    if (!run) return undefined;
    const nodes = await this.ds.manager.getRepository(RunNodeEntity).find({ where: { runId: run.id } });
    return runVariables(run, nodes);
  }

  /**
   * Waits until a run is terminal, cancelling it when `signal` fires. With `resumable` (a waiting node
   * that is executed again and finds the same run) it is not cancelled when the signal's reason says
   * the node stops only here (`shutdown`, `lease`, `pause`); with `cancel: false` it never is.
   */
  async awaitTerminal(principal: Principal, runId: string, signal: AbortSignal, opts: { resumable?: boolean; cancel?: boolean } = {}): Promise<RunSnapshot> {
    let cancelled = false;
    // A child executed here wakes the wait when it writes; one executed elsewhere (or waiting on a
    // person for hours) is read again after 200 ms, then less and less often, at most every 2 s.
    let pollMs = 200;
    for (;;) {
      // Its status only (one indexed read); the whole snapshot once it has ended.
      const { status } = await this.runs.state(principal, runId);
      if (TERMINAL.has(status)) return this.runs.get(principal, runId);
      if (signal.aborted) {
        const handedOver = !!opts.resumable && ['shutdown', 'lease', 'pause'].includes(signal.reason as string);
        if (handedOver || opts.cancel === false) return this.runs.get(principal, runId);
        if (!cancelled) {
          cancelled = true;
          await this.runs.cancel(principal, runId, 'parent-cancelled').catch(() => undefined);
        }
      }
      await this.engine.waitLocal(runId, pollMs);
      pollMs = Math.min(2000, Math.round(pollMs * 1.5));
    }
  }
}
