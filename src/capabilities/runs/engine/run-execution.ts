import { randomUUID } from 'node:crypto';
import { InterruptRequest, NodeExecutionContext } from '@openwop-host/plugin-sdk';
import { isDatabaseUnavailable } from '../../../platform/database/database-driver';
import type { BatchEvent } from '../../../platform/events/event-log.service';
import type { Principal } from '../../../platform/identity/principal';
import { effectRunner } from '../../../platform/idempotency/activity-ledger.service';
import { nodeReplayPolicy, resumesInFlight, type RegisteredExecutor } from './node-executor-registry.service';
import type { RunNodeEntity } from '../run-node.entity';
import { bindDeferredConfig, shieldDeferredSlots } from '../chain-deferred-parameters';
import { ClaimedRow, FlushResult, NodeWrite, PauseRequest, RunUpdate, WAITING_STATUS } from './run-store';
import { checkedInterrupt, interruptAnswer, openGates, Suspend, SuspendRequest } from './run-gates';
import type { Execution, ExecutionDeps, NodeOutcome, StopReason } from './run-execution.types';
import { Breach, costBreach, loopBreach, runBounds, RunBounds, watchRunDuration } from './run-bounds';
import { afterInsert } from './run-eager-start';
import { ReplaySource } from '../replay/run-replay';
import { RunTrace } from './run-tracing';
import { EngineWriteError, LeaseLost, leaseExpiredMessage, nodeEmitter, RunWriter } from './run-writer';
import { DagNode, nodeInputs, sinks, templateConfig, WorkflowDefinition } from '../workflow-definition';
import { failureRouted } from './edge-rules';
import { loggedExecutions, RunRouting } from './run-routing';
import { engineFaultBatch, FailureBatch, unsafeInFlight } from './run-recovery';

/** One claim's execution of one run: the per-run state machine (node scheduling, outputs, bounds, pause and cancel, suspension). */
export class RunExecution {
  private readonly def: WorkflowDefinition;
  private readonly principal: Principal;
  private readonly scope: { tenant: string; workspace?: string };
  private readonly bounds: RunBounds;
  private readonly outputs = new Map<string, Record<string, unknown>>();
  private readonly state = new Map<string, RunNodeEntity>();
  private readonly writer: RunWriter;
  /** Which node starts next (edge trigger rules, loops). */
  private readonly routing: RunRouting;
  private nodeExecutions: number;
  private costUsd: number;
  private startedAtMs = Date.now();
  /** run.started is not written yet. */
  private firstStart: boolean;
  /** Stops watching the RFC 0058 run duration. */
  private unwatchDuration?: () => void;
  private breach?: Breach;
  private trace!: RunTrace;
  /** An operator's pause this execution honours: no new node starts; `immediate` also aborts the nodes in flight. */
  private pausing?: PauseRequest;
  /** The source of a `replay` fork (see ReplaySource). */
  private readonly replay?: ReplaySource;
  /** What a node stores or performs through the host waits for the run's insert (see afterInsert). */
  private readonly inserted: ReturnType<typeof afterInsert>;

  constructor(
    private readonly d: ExecutionDeps,
    private readonly row: ClaimedRow,
    private readonly exec: Execution,
  ) {
    this.writer = new RunWriter(d.store, d.settings.leaseMs, {
      claim: () => this.claim(),
      shuttingDown: () => exec.reason === 'shutdown',
      committed: (u, batch, writes, seen) => this.committed(u, batch, writes, seen),
      leaseLost: () => {
        exec.reason = 'lease';
        exec.abort.abort();
      },
      warn: (msg, err) => d.log.warn({ msg, runId: row.id, err }),
    });
    exec.pause = (request) => this.requestPause(request);
    exec.writeNow = () => void this.flush().catch(() => undefined);
    this.inserted = afterInsert(exec, () => this.flush());
    // The nodes' signal: aborted with the execution (cancel, pause, lease, shutdown) or alone (a failure, a breach).
    exec.abort.signal.addEventListener('abort', () => this.nodeAbort.abort(exec.reason), { once: true });
    exec.renewed = (info) => (info.cancelRequested ? this.requestStop('cancel') : info.pause && !info.pause.pausedAt && this.requestPause(info.pause));
    this.def = row.definition;
    this.routing = new RunRouting(this.def, { state: this.state, outputs: this.outputs, writer: this.writer });
    this.scope = { tenant: row.tenant, workspace: row.workspace ?? undefined };
    this.principal = { tenant: row.tenant, workspace: row.workspace ?? undefined, principal: row.principal ?? 'system', scopes: new Set(row.scopes ?? []), kind: 'system' };
    this.bounds = runBounds(row.configurable, d.settings.limits);
    this.nodeExecutions = row.node_executions;
    this.costUsd = row.cost_usd;
    this.firstStart = row.status === 'pending';
    if (row.started_at) this.startedAtMs = new Date(row.started_at).getTime();
    this.replay = ReplaySource.of(row, d.events);
  }

  /** `{durationMs}` of an event, or nothing in a replay (its events must not depend on the wall clock). */
  private took(ms: number): { durationMs?: number } {
    return this.replay ? {} : { durationMs: Math.max(0, ms) };
  }

  private get signal(): AbortSignal {
    return this.exec.abort.signal;
  }

  async run(): Promise<void> {
    this.trace = RunTrace.start(this.row, !this.firstStart);
    const lease = this.exec.lease;
    const onLeaseEnd = () => this.leaseEnded(lease?.reason, lease?.stalledMs);
    lease?.signal.addEventListener('abort', onLeaseEnd, { once: true });
    try {
      await this.trace.run(() => this.execute());
    } catch (e) {
      if (e instanceof LeaseLost || this.exec.reason === 'lease' || this.exec.reason === 'shutdown') throw e;
      if ((e instanceof EngineWriteError && e.unavailable) || isDatabaseUnavailable(e)) {
        // Nothing can be written now. The lease runs out and a claim pass (here or on another
        // replica) resumes the run from what was written once the database answers again.
        this.d.log.error({ msg: 'run engine could not write to the database; the run resumes when it answers', runId: this.row.id, err: ((e instanceof EngineWriteError ? e.cause : e) as Error)?.message });
        this.requestStop('lease');
        this.d.releaseWhenPossible(this.row.id, this.row.fence);
        return;
      }
      await this.failOnEngineFault(e);
      throw e;
    } finally {
      this.trace.end(this.exec.reason === 'cancel' ? undefined : this.exec.reason);
      lease?.signal.removeEventListener('abort', onLeaseEnd);
      // The lease is no longer kept: the last write released it (or it was lost). At shutdown the
      // keeper hands back the leases still held, after every execution has stopped.
      if (this.exec.reason !== 'shutdown') void lease?.drop();
      this.unwatchDuration?.();
      this.d.finished(this.row.id);
      this.d.events.wake();
    }
  }

  /**
   * An engine fault (not a node's): the run is failed with `engine_error`, fenced, instead of being
   * claimed again and failing again after every lease expiry. Its node rows are made to agree: a node
   * written running or waiting fails with the same error, a node never started is skipped. When even
   * that cannot be written, the run is left to its lease and resumed later.
   */
  private async failOnEngineFault(e: unknown): Promise<void> {
    this.d.log.error({ msg: 'run engine fault; failing the run', runId: this.row.id, err: (e as Error)?.message, stack: (e as Error)?.stack });
    this.writer.discard();
    this.stopNodes();
    const { error } = this.apply(engineFaultBatch(this.def, this.state, this.firstStart, this.row));
    this.queue({ type: 'run.failed', payload: { error, ...this.took(Date.now() - this.startedAtMs) } });
    try {
      await this.flush({ status: 'failed', error, terminal: true });
    } catch (again) {
      this.d.log.error({ msg: 'run engine could not record the failure of the run; it is retried after its lease', runId: this.row.id, err: (again as Error)?.message });
    }
  }

  private async execute(): Promise<void> {
    const { row } = this;
    await this.d.workspace?.pin(row, this.firstStart, this.exec.eager); // RFC 0059 §D: the run's workspace snapshot point (workspace-snapshot.ts)
    if (this.firstStart) {
      const owner: Record<string, string> = { tenant: row.tenant };
      if (row.workspace) owner.workspace = row.workspace;
      if (row.principal) owner.principal = row.principal;
      this.queue({ type: 'run.started', payload: { workflowId: row.workflow_id, inputs: row.inputs ?? {}, transport: row.metadata?.transport === 'mcp' ? 'mcp' : 'rest', owner } });
      if (this.bounds.budget) this.queue(this.bounds.budget.reserved());
    } else {
      const rows = await this.d.store.loadNodes({ runId: row.id });
      for (const n of rows) {
        this.state.set(n.nodeId, n);
        if (n.status === 'completed') this.outputs.set(n.nodeId, n.outputs ?? {});
      }
      this.routing.load(rows, await loggedExecutions(this.def, this.d.events, this.scope, row.id));
    }
    this.unwatchDuration = watchRunDuration(this.bounds.runTimeoutMs, this.startedAtMs, (b) => {
      if (this.breach || this.exec.reason) return;
      this.breach = b;
      this.stopNodes();
    });
    if (row.cancel_requested) return this.finishCancelled();
    if (this.breach) return this.finishBreached();

    // Nodes left in flight by a replica that died: repeat only what may be repeated.
    const interrupted = await unsafeInFlight(this.def, this.state, async (n) => {
      const policy = await nodeReplayPolicy(this.d.executors, n, this.principal);
      return policy === 'non-deterministic' && !resumesInFlight(n.typeId) ? policy : undefined;
    });
    if (interrupted) return this.finishFailed(this.apply(interrupted).error, interrupted.nodeId);
    // A failure an edge routes (any_failed, all_complete) does not fail the run.
    const failedBefore = this.def.nodes.find((n) => this.state.get(n.id)?.status === 'failed' && !failureRouted(this.def, n.id));
    if (failedBefore) {
      return this.finishFailed(this.state.get(failedBefore.id)!.error ?? { code: 'node_failed', message: 'A node failed.' }, failedBefore.id);
    }

    const inflight = new Map<string, Promise<NodeOutcome>>();
    let failure: { error: { code: string; message: string }; nodeId: string } | undefined;
    const suspended: NodeOutcome[] = [];
    const concurrency = this.d.settings.nodeConcurrency;
    for (;;) {
      if (!this.signal.aborted && !failure && !suspended.length && !this.breach && !this.pausing) {
        for (let i = 0; i < this.def.nodes.length; i++) {
          const n = this.def.nodes[i];
          if (inflight.size >= concurrency) break;
          const step = inflight.has(n.id) ? undefined : this.routing.step(n.id);
          // A skip may settle what an earlier node waits for: scan again.
          if (step === 'skip') i = (this.routing.skip(n, 'trigger-rule-unsatisfied'), -1);
          if (step !== 'launch') continue;
          // A loop past its maxLoopbackIterations (loop-backs.ts), or the run past its RFC 0058 node executions.
          this.breach = this.routing.loopBackBreach(n.id) ?? (this.nodeExecutions + 1 > this.bounds.maxLoopIterations ? loopBreach(this.bounds.maxLoopIterations, this.nodeExecutions + 1, n.id) : undefined);
          if (this.breach) break;
          this.nodeExecutions++;
          const again = this.routing.visit(n);
          inflight.set(n.id, this.trace.node(n, () => this.launch(n, again)));
        }
      }
      if (!inflight.size) break;
      // Unwritten progress is written within ~250 ms even while a long node is in flight.
      let tick: NodeJS.Timeout | undefined;
      const aged = this.writer.pendingEvents
        ? new Promise<'flush'>((resolve) => (tick = setTimeout(() => resolve('flush'), Math.max(0, 250 - (Date.now() - this.writer.pendingSince)))))
        : undefined;
      const raced: NodeOutcome | 'flush' = await Promise.race<NodeOutcome | 'flush'>(aged ? [...inflight.values(), aged] : [...inflight.values()]);
      clearTimeout(tick);
      if (raced === 'flush') {
        await this.flush();
        continue;
      }
      const outcome = raced;
      inflight.delete(outcome.node.id);
      if (outcome.engineFault) {
        this.stopNodes();
        await Promise.allSettled(inflight.values());
        throw outcome.engineFault;
      }
      const n = outcome.node;
      // Executors are looked up by their registered typeId (aliases folded); an unserved one is `unknown`.
      this.d.metrics.nodeFinished(this.d.executors.get(n.typeId)?.typeId ?? 'unknown', outcome.ok ? 'completed' : outcome.suspend ? 'suspended' : this.signal.aborted || this.breach ? 'cancelled' : 'failed');
      if (outcome.ok) {
        this.routing.settle(n.id, 'completed');
        this.outputs.set(n.id, outcome.ok.outputs);
        this.queue({ type: 'node.completed', nodeId: n.id, payload: { nodeId: n.id, outputs: outcome.ok.outputs, ...this.took(outcome.ok.durationMs) } });
        this.writer.write({ nodeId: n.id, typeId: n.typeId, status: 'completed', attempt: outcome.attempt, outputs: outcome.ok.outputs, error: null, gateId: null });
        this.addCost(outcome.ok.costUsd, n.id);
        if (!outcome.safe) await this.flush();
      } else if (outcome.suspend) {
        suspended.push(outcome);
      } else if (outcome.failed && this.exec.reason === 'pause' && !this.breach) {
        // Aborted by an immediate pause: nothing is written for it, so it runs again on resume.
      } else if (outcome.failed) {
        if (this.signal.aborted || this.breach) {
          this.queue({ type: 'node.cancelled', nodeId: n.id, payload: { nodeId: n.id, reason: this.breach ? this.breach.code : (this.exec.reason ?? 'aborted') } });
          this.writer.write({ nodeId: n.id, typeId: n.typeId, status: 'cancelled', attempt: outcome.attempt, error: outcome.failed });
        } else {
          this.queue({ type: 'node.failed', nodeId: n.id, payload: { nodeId: n.id, error: outcome.failed, attempts: outcome.attempt + 1 } });
          this.writer.write({ nodeId: n.id, typeId: n.typeId, status: 'failed', attempt: outcome.attempt, error: outcome.failed });
          this.routing.settle(n.id, 'failed');
          if (!failure && !failureRouted(this.def, n.id)) {
            failure = { error: outcome.failed, nodeId: n.id };
            this.stopNodes();
          }
        }
      }
      if (this.writer.pendingEvents >= 200 || (this.writer.pendingEvents && Date.now() - this.writer.pendingSince > 250)) await this.flush();
    }

    if (this.exec.reason === 'lease' || this.exec.reason === 'shutdown') return;
    if (this.exec.reason === 'cancel') return this.finishCancelled();
    if (this.breach) return this.finishBreached();
    if (failure) return this.finishFailed(failure.error, failure.nodeId);
    if (suspended.length) return this.suspend(suspended);
    // Paused (also when the drained node was the last one: the run completes only after its resume).
    if (this.pausing) return this.finishPaused();
    const out: Record<string, unknown> = {};
    for (const s of sinks(this.def)) if (this.outputs.has(s.id)) out[s.id] = this.outputs.get(s.id)!;
    this.queue({ type: 'run.completed', payload: { outputs: out, ...this.took(Date.now() - this.startedAtMs) } });
    await this.flush({ status: 'completed', outputs: out, terminal: true });
  }

  /** Adds a reported cost: an RFC 0084 budget appends its events and breaches at its limit; crossing `maxCostUsd` (strictly greater) breaches too. */
  private addCost(usd: number, nodeId: string): void {
    if (!(usd > 0) || !Number.isFinite(usd)) return;
    this.costUsd += usd;
    const exhausted = this.bounds.budget?.charge(this.costUsd - usd, this.costUsd, nodeId, (e) => this.queue(e));
    if ((exhausted || this.costUsd > this.bounds.maxCostUsd) && !this.breach) {
      this.breach = exhausted ?? costBreach(this.bounds.maxCostUsd, this.costUsd, nodeId);
      this.stopNodes();
    }
  }

  /** Aborts the nodes in flight (failure or breach) without marking the run cancelled. */
  private nodeAbort = new AbortController();
  private stopNodes(): void {
    this.nodeAbort.abort();
  }

  /** `again`: a new execution of a node that ran before (a loop): its in-flight marker is written first, over its last row. */
  private async launch(n: DagNode, again = false): Promise<NodeOutcome> {
    const ex = this.d.executors.get(n.typeId) as RegisteredExecutor;
    const prior = this.state.get(n.id);
    const attempt = prior ? prior.attempt + (prior.status === 'running' ? 1 : 0) : 0;
    const base = { node: n, attempt, safe: true };
    try {
      if (!ex) throw Object.assign(new Error(`No executor serves ${n.typeId}.`), { code: 'unknown_node_type' });
      const policy = await nodeReplayPolicy(this.d.executors, n, this.principal);
      base.safe = policy !== 'non-deterministic';
      this.queue({ type: 'node.started', nodeId: n.id, payload: { nodeId: n.id, typeId: n.typeId, attempt } });
      // The in-flight marker, so the run's nodeStates show the node running as its events do. A
      // replay-safe node's marker rides the next batch (a node that finishes first is written only
      // `completed`); a side-effecting node's is written before it starts, so a replica taking over
      // knows it may have had effects.
      this.writer.write({ nodeId: n.id, typeId: n.typeId, status: 'running', attempt });
      if (!base.safe || again) await this.flush({ current: n.id });
      if (this.replay && policy !== 'deterministic') {
        // A replay never repeats an effect or asks a human again: the source's recorded outcome, or fail closed.
        const outputs = await this.replay.outputs(n.id, policy);
        return { ...base, ok: { outputs, costUsd: 0, durationMs: 0 } };
      }
      const upstream: Record<string, unknown> = Object.fromEntries([...this.outputs.entries()]);
      // Deferred chain parameters (RFC 0124) are bound from the run's variables, its per-run overrides included.
      const config = bindDeferredConfig(templateConfig(shieldDeferredSlots(n.config), { inputs: this.row.inputs ?? {}, nodes: upstream }) as Record<string, unknown>, this.def, this.row.configurable, this.outputs);
      const signal = this.nodeAbort.signal;
      const started = Date.now();
      const ctx: NodeExecutionContext = {
        runId: this.row.id,
        nodeId: n.id,
        typeId: n.typeId,
        config,
        runInputs: this.row.inputs ?? {},
        inputs: nodeInputs(this.def, n.id, this.outputs),
        attempt,
        principal: { tenant: this.principal.tenant, workspace: this.principal.workspace, principal: this.principal.principal, scopes: this.principal.scopes },
        signal,
        emit: nodeEmitter(this.writer, n.id, { addCost: (usd) => this.addCost(usd, n.id) }),
        awaitApproval: (req) => this.awaitApproval(n, req),
        // A replay's default-deny guard at the effect seam: a node declared deterministic that reaches an effect fails closed.
        effect: this.replay ? this.replay.effect(n.id) : this.inserted.effect(effectRunner(this.d.ledger, { tenant: this.row.tenant, runId: this.row.id, nodeId: n.id, execution: this.routing.execution(n.id) }, signal)),
        interrupt: (req) => this.interrupt(n, req),
      };
      ctx.artifacts = this.inserted.artifacts(this.d.artifacts.forNode(this.scope, this.row.id, n.id, (type, payload) => ctx.emit(type, payload)));
      this.d.nodeMcp?.bind(ctx, this.principal); // ctx.mcp (node-mcp.ts)
      this.d.workspace?.bind(ctx, this.row, this.inserted.read); // ctx.workspace, the snapshot as of the run's start
      const result = await ex.provider.execute(ctx);
      const outputs = result && typeof result.outputs === 'object' && result.outputs && !Array.isArray(result.outputs) ? result.outputs : {};
      const costUsd = typeof result?.costUsd === 'number' && result.costUsd > 0 ? result.costUsd : 0;
      return { ...base, ok: { outputs, costUsd, durationMs: Date.now() - started } };
    } catch (e) {
      if (e instanceof Suspend) return { ...base, suspend: e.request };
      if (e instanceof EngineWriteError) return { ...base, engineFault: e };
      if (e instanceof LeaseLost) {
        // flush() already stopped the execution: nothing more is written by this claim.
        return { ...base, failed: { code: 'lease_lost', message: 'The run lease was lost.' } };
      }
      const code = typeof (e as { code?: unknown }).code === 'string' && (e as { code: string }).code ? (e as { code: string }).code : 'node_failed';
      const message = (e as Error).message || 'The node failed.';
      // A failed execution may still have cost something (e.g. a tool call that errored).
      const spent = (e as { costUsd?: unknown }).costUsd;
      if (typeof spent === 'number') this.addCost(spent, n.id);
      return { ...base, failed: { code, message } };
    }
  }

  /** The node's gate state, or Suspend when there is no decided gate yet. */
  private async awaitApproval(n: DagNode, req: { title: string; artifactType?: string }): Promise<'granted' | 'denied'> {
    const gate = await this.decidedGate(n, { kind: 'approval', ...req });
    return gate.state === 'granted' ? 'granted' : 'denied';
  }

  /**
   * ctx.interrupt: the resume value of the node's resolved gate; Suspend while there is none (the
   * gate is opened when the run parks). Re-executing the node after a restart or a takeover reads
   * the same gate, so an interrupt is asked once per node execution and answered from the database.
   */
  private async interrupt(n: DagNode, req: InterruptRequest): Promise<unknown> {
    return interruptAnswer(await this.decidedGate(n, checkedInterrupt(req, n.id)), req, n.id);
  }

  private async decidedGate(n: DagNode, req: SuspendRequest): Promise<{ state: string; resume_value: unknown }> {
    const gateId = this.state.get(n.id)?.gateId;
    if (gateId) {
      const gate = await this.d.approvals.stateOf(gateId, { tenant: this.row.tenant });
      if (gate && gate.state !== 'pending') {
        const resumeValue = gate.state === 'granted' ? (gate.resumeValue ?? { action: 'accept' }) : { action: 'reject' };
        this.queue({ type: 'node.resumed', nodeId: n.id, payload: { nodeId: n.id, interruptId: gateId, resumeValue } });
        return { state: gate.state, resume_value: gate.resumeValue };
      }
      if (gate) throw new Suspend(req); // still pending (another node's gate released the run)
    }
    throw new Suspend(req);
  }

  /**
   * Opens the gates of suspended nodes (reusing a still-pending one) and parks the run in the
   * `waiting-*` status of the first one's kind: in one transaction, the run row locked first (then its
   * gates, the order a cancel and a resolve lock them in), the waiting nodes and their `node.suspended`
   * written by the one fenced flush.
   */
  private async suspend(nodes: NodeOutcome[]): Promise<void> {
    await this.flush();
    const status = WAITING_STATUS[nodes[0].suspend?.kind ?? 'approval'] ?? 'waiting-approval';
    this.d.events.closeLocalStream(this.row.id); // written by a transaction, not published: followers read the log now
    await this.d.store.transaction(async (tx) => {
      await tx.lockRun({ runId: this.row.id });
      const gates = nodes.map((o) => ({ node: o.node, attempt: o.attempt, suspend: o.suspend, gateId: this.state.get(o.node.id)?.gateId ?? null }));
      const { writes, events } = await openGates(tx, this.d.approvals, this.row, this.principal, gates);
      const update: RunUpdate = { status, release: true, current: nodes[0].node.id };
      const seen = await tx.flush({ ...this.claim(), update, writes, events, eventIds: events.map(() => randomUUID()) });
      if (!seen.fenced) throw new LeaseLost('the run lease was lost');
      if (seen.cancel) this.requestStop('cancel');
    });
    this.trace.status(status);
    this.d.events.wake();
  }

  private async finishFailed(error: { code: string; message: string }, nodeId?: string): Promise<void> {
    this.routing.skipRemaining('upstream-failed');
    const unwind = await this.d.compensation?.mint(this.row, nodeId ? 'node-failure' : 'cap-breach', () => this.flush()); // RFC 0151 (compensation/)
    this.queue({ type: 'run.failed', payload: { error, ...(nodeId ? { failedNodeId: nodeId } : {}), ...this.took(Date.now() - this.startedAtMs) } });
    await this.flush({ status: 'failed', error, terminal: true });
    unwind?.();
  }

  private async finishBreached(): Promise<void> {
    const b = this.breach!;
    this.queue(b.event ?? { type: 'cap.breached', nodeId: b.nodeId, payload: { kind: b.kind, limit: b.limit, observed: b.observed, ...(b.nodeId ? { nodeId: b.nodeId } : {}) } });
    await this.finishFailed({ code: b.code, message: b.message });
  }

  private requestPause(request: PauseRequest): void {
    if (this.pausing || this.exec.reason) return;
    this.pausing = request;
    if (request.drainPolicy === 'immediate') this.requestStop('pause');
  }

  /** Parks the run in `paused`, its lease released (a paused run holds none), with `run.paused`. */
  private async finishPaused(): Promise<void> {
    const p = this.pausing!;
    this.queue({ type: 'run.paused', payload: { drainPolicy: p.drainPolicy, ...(p.reason ? { reason: p.reason } : {}) } });
    await this.flush({ status: 'paused', release: true, paused: true });
  }

  private async finishCancelled(): Promise<void> {
    this.routing.skipRemaining('run-cancelled');
    // A node suspended on a gate: close the gate (nobody needs to decide any more).
    const reason = (await this.d.store.cancelReason?.({ runId: this.row.id }).catch(() => undefined)) ?? 'cancel-requested';
    const unwind = await this.d.compensation?.mint(this.row, 'run-cancel', () => this.flush());
    this.queue({ type: 'run.cancelled', payload: { reason, ...this.took(Date.now() - this.startedAtMs) } });
    await this.flush({ status: 'cancelled', terminal: true });
    unwind?.();
  }

  /** This claim and its counters as they are now (written with the run row by every flush). */
  private claim() {
    const { row, d } = this;
    return { runId: row.id, owner: d.owner, fence: row.fence, tenant: row.tenant, workspace: row.workspace, leaseMs: d.settings.leaseMs, nodeExecutions: this.nodeExecutions, costUsd: this.costUsd };
  }

  private queue(e: BatchEvent): void {
    this.writer.queue(e);
  }

  private apply<B extends FailureBatch>(b: B): B {
    for (const e of b.events) this.queue(e);
    for (const w of b.writes) this.writer.write(w);
    return b;
  }

  /** Writes the pending node rows and events, fenced, in one statement (serialized per run). */
  private flush(update: RunUpdate = {}): Promise<void> {
    return this.writer.flush(update);
  }

  /** After a committed write: react to what the fence saw, count a finished run, wake the event readers, note the node rows. */
  private committed(u: RunUpdate, batch: BatchEvent[], writes: NodeWrite[], seen?: FlushResult): void {
    if (u.status) this.trace.status(u.status, u.error);
    const final = u.terminal && (u.status === 'completed' || u.status === 'failed' || u.status === 'cancelled') ? u.status : undefined;
    if (final) this.d.metrics.runFinished(final, { runId: this.row.id, tenant: this.row.tenant, workspace: this.row.workspace, errorCode: u.error?.code, traceParent: this.row.trace_parent });
    // The followers waiting here get what was written without reading it back; fenced out, they read the log.
    if (batch.length && seen?.events) this.d.events.publish({ tenant: this.row.tenant, workspace: this.row.workspace }, this.row.id, seen.events, batch.length);
    else if (batch.length) {
      this.d.events.closeLocalStream(this.row.id);
      this.d.events.wake();
    }
    // The run's last write: its stream stays answerable as written, with its final status.
    if (final && seen?.events) this.d.events.closeLocalStream(this.row.id, final);
    if (seen?.cancel && !u.terminal) this.requestStop('cancel');
    else if (seen?.pause && !seen.pause.pausedAt && !u.terminal && !u.paused) this.requestPause(seen.pause);
    if (batch.some((e) => e.type === 'run.started')) this.firstStart = false;
    for (const w of writes) {
      const s = this.state.get(w.nodeId);
      this.state.set(w.nodeId, { ...(s ?? ({} as RunNodeEntity)), runId: this.row.id, nodeId: w.nodeId, status: w.status, attempt: w.attempt, outputs: w.outputs ?? null, error: w.error ?? null, gateId: w.gateId ?? s?.gateId ?? null });
    }
  }

  private requestStop(reason: StopReason): void {
    if (this.exec.reason) return;
    this.exec.reason = reason;
    this.exec.abort.abort();
  }

  /**
   * The lease keeper ended this claim's lease: lost (another claim took the run: nothing more is
   * written) or expired (renewals failed for a whole lease, the database away, or this process stalled
   * so long it could not renew: the run resumes from what was written, the lease handed back as soon as it can be).
   */
  private leaseEnded(reason: string | undefined, stalledMs?: number): void {
    if (reason === 'released') return;
    if (reason === 'shutdown') return this.requestStop('shutdown');
    if (reason === 'expired' && !this.exec.reason) {
      this.d.log.error({ msg: leaseExpiredMessage(stalledMs), runId: this.row.id, stalledMs });
      this.requestStop('lease');
      this.d.releaseWhenPossible(this.row.id, this.row.fence);
      return;
    }
    this.requestStop('lease');
  }
}
