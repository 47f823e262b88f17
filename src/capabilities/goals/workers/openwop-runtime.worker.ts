import { Inject, Injectable } from '@nestjs/common';
import { GoalRunOutcome, GoalRunVerification, GoalWorker, GoalWorkerProvider, GoalWorkerStartContext, GoalWorkSubject } from '@openwop-host/plugin-sdk';
import { GOALS_SETTINGS, GoalsSettings, OpenWopRuntimeSettings } from '../goals.settings';

export const OPENWOP_RUNTIME_WORKER = 'openwop-runtime';

const TERMINAL = new Set(['completed', 'failed', 'cancelled']);
const WAITING = new Set(['waiting-input', 'waiting-approval', 'waiting-external', 'paused']);

/** A failure talking to the runtime; the message never carries the credential or a response body. */
export class RuntimeRequestError extends Error {
  constructor(message: string, readonly status?: number) {
    super(message);
    this.name = 'RuntimeRequestError';
  }
}

/**
 * The built-in goal worker: each iteration starts a run of the goal's workflow (its `workflowId`,
 * else the configured one) on an OpenWOP runtime (`POST /v1/runs`, with the iteration's idempotency key), then follows it on later ticks
 * (`GET /v1/runs/{runId}`) until it is terminal, and reads its output (`variables`), its cost
 * (`metrics.openwopCost.usd`, else the sum of `provider.usage.costEstimateUsd`) and its last
 * `agent.verified` verdict from the event log (`GET /v1/runs/{runId}/events/poll`). A run that waits on an
 * unresolved RFC 0044 confidence-escalation interrupt (`interrupt.requested` kind `low-confidence`) escalates the goal.
 */
@Injectable()
@GoalWorker({ id: OPENWOP_RUNTIME_WORKER, description: 'Starts a run of a configured workflow on an OpenWOP runtime over REST.' })
export class OpenWopRuntimeWorker implements GoalWorkerProvider {
  constructor(@Inject(GOALS_SETTINGS) private readonly settings: GoalsSettings) {}

  get pollIntervalMs(): number {
    return this.settings.runtime?.pollIntervalMs ?? 5000;
  }

  available(): boolean {
    return this.settings.runtime !== undefined;
  }

  async start(goal: GoalWorkSubject, ctx: GoalWorkerStartContext): Promise<{ runId: string }> {
    const rt = this.runtime();
    const body = {
      workflowId: goal.workflowId ?? rt.workflowId,
      inputs: { goalId: goal.goalId, objective: goal.objective, iteration: goal.iteration },
      metadata: { goalId: goal.goalId, goalIteration: goal.iteration },
    };
    const res = await this.request(rt, 'POST', '/v1/runs', ctx.signal, body, { 'Idempotency-Key': ctx.idempotencyKey });
    const runId = (res as { runId?: unknown }).runId;
    if (typeof runId !== 'string' || !runId) throw new RuntimeRequestError('the runtime answered POST /v1/runs without a runId');
    return { runId };
  }

  async collect(_goal: GoalWorkSubject, runId: string, signal: AbortSignal): Promise<GoalRunOutcome | undefined> {
    const rt = this.runtime();
    const snapshot = (await this.request(rt, 'GET', `/v1/runs/${encodeURIComponent(runId)}`, signal)) as {
      status?: unknown;
      variables?: unknown;
      metrics?: { openwopCost?: { usd?: unknown }; cost?: unknown };
    };
    const status = typeof snapshot.status === 'string' ? snapshot.status : '';
    if (!TERMINAL.has(status)) {
      // A run waiting on a human may be waiting on an RFC 0044 confidence escalation: the goal escalates.
      if (!WAITING.has(status)) return undefined;
      const waiting = await this.events(rt, runId, signal);
      const resolved = new Set(waiting.filter((e) => e.type === 'interrupt.resolved').map((e) => (e.payload as { interruptId?: unknown })?.interruptId));
      const escalation = waiting.some((e) => {
        const p = (e.payload ?? {}) as { kind?: unknown; interruptId?: unknown };
        return e.type === 'interrupt.requested' && p.kind === 'low-confidence' && !resolved.has(p.interruptId);
      });
      return escalation ? { runId, status, escalated: true } : undefined;
    }
    const events = await this.events(rt, runId, signal);
    let verification: GoalRunVerification | undefined;
    let usageCost = 0;
    let sawUsageCost = false;
    for (const e of events) {
      const p = (e.payload ?? {}) as Record<string, unknown>;
      if (e.type === 'agent.verified' && (p.verdict === 'pass' || p.verdict === 'fail' || p.verdict === 'revise')) {
        verification = {
          agentId: typeof p.agentId === 'string' ? p.agentId : undefined,
          verdict: p.verdict,
          confidence: typeof p.confidence === 'number' ? p.confidence : undefined,
        };
      } else if (e.type === 'provider.usage' && typeof p.costEstimateUsd === 'number') {
        usageCost += p.costEstimateUsd;
        sawUsageCost = true;
      }
    }
    const rolled = snapshot.metrics?.openwopCost?.usd;
    const costUsd = typeof rolled === 'number' ? rolled : sawUsageCost ? usageCost : undefined;
    return { runId, status, output: snapshot.variables, costUsd, verification };
  }

  private async events(rt: OpenWopRuntimeSettings, runId: string, signal: AbortSignal): Promise<Array<{ type?: string; payload?: unknown; sequence?: number }>> {
    const out: Array<{ type?: string; payload?: unknown; sequence?: number }> = [];
    let last = 0;
    // Bounded paging: a run's verdict and usage are read once, at its end.
    for (let page = 0; page < 50; page++) {
      const res = (await this.request(rt, 'GET', `/v1/runs/${encodeURIComponent(runId)}/events/poll?lastSequence=${last}&timeout=0`, signal)) as
        | { events?: Array<{ type?: string; payload?: unknown; sequence?: number }> }
        | Array<{ type?: string; payload?: unknown; sequence?: number }>;
      const events = Array.isArray(res) ? res : (res.events ?? []);
      if (!events.length) break;
      out.push(...events);
      const next = Math.max(...events.map((e) => (typeof e.sequence === 'number' ? e.sequence : last)));
      if (next <= last) break;
      last = next;
    }
    return out;
  }

  private runtime(): OpenWopRuntimeSettings {
    if (!this.settings.runtime) throw new RuntimeRequestError('no OpenWOP runtime is configured (goals.runtime)');
    return this.settings.runtime;
  }

  private async request(rt: OpenWopRuntimeSettings, method: string, path: string, signal: AbortSignal, body?: unknown, headers: Record<string, string> = {}): Promise<unknown> {
    const h: Record<string, string> = { Accept: 'application/json', ...headers };
    if (body !== undefined) h['Content-Type'] = 'application/json';
    if (rt.apiKey) h.Authorization = `Bearer ${rt.apiKey}`;
    let res: Response;
    try {
      res = await fetch(`${rt.baseUrl}${path}`, {
        method,
        headers: h,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.any([signal, AbortSignal.timeout(rt.requestTimeoutMs)]),
      });
    } catch (e) {
      throw new RuntimeRequestError(`${method} ${path.split('?')[0]} failed: ${(e as Error).name}`);
    }
    if (!res.ok) {
      await res.body?.cancel().catch(() => undefined);
      throw new RuntimeRequestError(`${method} ${path.split('?')[0]} answered ${res.status}`, res.status);
    }
    try {
      return await res.json();
    } catch {
      throw new RuntimeRequestError(`${method} ${path.split('?')[0]} answered with a body that is not JSON`);
    }
  }
}
