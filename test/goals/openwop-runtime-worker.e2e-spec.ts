/**
 * The built-in openwop-runtime goal worker against a small fake OpenWOP runtime on 127.0.0.1: it
 * starts a run per iteration (POST /v1/runs with the iteration's idempotency key), follows it to a
 * terminal state, and hands the judge the run's output, cost and verifier verdict.
 */
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { HealthService } from '../../src/platform/health/health.service';
import { createTestApp, TestApp } from '../support/test-app';
import { checkGoalWorkerContract } from '@openwop-host/plugin-sdk';
import { OpenWopRuntimeWorker } from '../../src/capabilities/goals/workers/openwop-runtime.worker';
import { GoalExtensionsService } from '../../src/capabilities/goals/goal-extensions.service';
import { GoalClock } from '../../src/capabilities/goals/goal-clock';
import { GoalSchedulerService } from '../../src/capabilities/goals/goal-scheduler.service';
import { CRITERIA, ManualClock } from './goal-test-kit';

interface FakeRun {
  id: string;
  key: string;
  body: Record<string, unknown>;
  polls: number;
}

class FakeRuntime {
  readonly runs: FakeRun[] = [];
  readonly requests: Array<{ method: string; url: string; auth?: string; key?: string }> = [];
  down = false;
  /** How many status polls a run answers `running` before it completes. */
  pollsUntilDone = 1;
  outcome: (run: FakeRun) => { variables: Record<string, unknown>; costUsd?: number; verdict?: 'pass' | 'fail'; escalate?: boolean } = () => ({ variables: { green: false } });
  private server?: http.Server;

  async start(): Promise<string> {
    this.server = http.createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', r));
    return `http://127.0.0.1:${(this.server!.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    await new Promise<void>((r) => this.server?.close(() => r()) ?? r());
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    let text = '';
    for await (const chunk of req) text += chunk;
    this.requests.push({ method: req.method!, url: req.url!, auth: req.headers.authorization, key: req.headers['idempotency-key'] as string | undefined });
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (this.down) return send(503, { error: 'unavailable', message: 'down' });
    if (req.headers.authorization !== 'Bearer rt-secret-key') return send(401, { error: 'unauthenticated', message: 'no' });
    const url = new URL(req.url!, 'http://x');
    if (req.method === 'POST' && url.pathname === '/v1/runs') {
      const key = req.headers['idempotency-key'] as string;
      let run = this.runs.find((r) => r.key === key);
      if (!run) {
        run = { id: `rt-run-${this.runs.length + 1}`, key, body: JSON.parse(text), polls: 0 };
        this.runs.push(run);
      }
      return send(201, { runId: run.id, status: 'pending' });
    }
    const m = /^\/v1\/runs\/([^/]+)(\/events\/poll)?$/.exec(url.pathname);
    const run = m && this.runs.find((r) => r.id === m[1]);
    if (!run) return send(404, { error: 'not_found', message: 'no such run' });
    const out = this.outcome(run);
    if (m[2]) {
      const events = [
        { eventId: 'e1', runId: run.id, sequence: 1, type: 'run.started', payload: {} },
        { eventId: 'e2', runId: run.id, sequence: 2, type: 'provider.usage', payload: { provider: 'x', model: 'y', inputTokens: 1, outputTokens: 1, costEstimateUsd: 0.01 } },
      ];
      if (out.escalate) events.push({ eventId: 'e4', runId: run.id, sequence: 4, type: 'interrupt.requested', payload: { kind: 'low-confidence', interruptId: 'i1' } as never });
      if (out.verdict) events.push({ eventId: 'e3', runId: run.id, sequence: 3, type: 'agent.verified', payload: { agentId: 'critic-1', target: 'e2', verdict: out.verdict, confidence: 0.8 } as never });
      const after = Number(url.searchParams.get('lastSequence') ?? 0);
      return send(200, { events: events.filter((e) => e.sequence > after) });
    }
    run.polls++;
    if (out.escalate) return send(200, { runId: run.id, workflowId: 'release-check', status: 'waiting-input' });
    if (run.polls <= this.pollsUntilDone) return send(200, { runId: run.id, workflowId: 'release-check', status: 'running' });
    const snapshot: Record<string, unknown> = { runId: run.id, workflowId: 'release-check', status: 'completed', variables: out.variables };
    if (out.costUsd !== undefined) snapshot.metrics = { openwopCost: { usd: out.costUsd } };
    return send(200, snapshot);
  }
}

describe('openwop-runtime goal worker', () => {
  const runtime = new FakeRuntime();
  const clock = new ManualClock();
  let t: TestApp;
  let token: string;
  let tick: () => Promise<unknown>;

  beforeAll(async () => {
    const baseUrl = await runtime.start();
    t = await createTestApp({ configFile: { goals: { runtime: { baseUrl, apiKey: 'rt-secret-key', workflowId: 'release-check', pollIntervalMs: 50 }, retryDelayMs: 500 } } });
    // Only the built-in runtime worker serves these goals; the test controls the clock.
    t.moduleRef.get(GoalClock).useSource(clock.now);
    const scheduler = t.moduleRef.get(GoalSchedulerService);
    tick = () => scheduler.runOnce({ now: clock.now() });
    token = await t.key({ tenant: 'acme', principal: 'alice', scopes: ['goals:read', 'goals:write', 'runs:create'] });
  });

  afterAll(async () => {
    await t?.close();
    await runtime.stop();
  });

  const create = async (over: Record<string, unknown>) => {
    const res = await t.http('POST', '/v1/goals', {
      token,
      body: { objective: 'keep the release checklist green', completion: { check: 'host' }, criteria: CRITERIA, continuation: { mode: 'schedule' }, worker: 'openwop-runtime', schedule: { intervalMs: 1000 }, bounds: { maxLoopIterations: 5 }, ...over },
    });
    expect(res.status).toBe(201);
    return res.body as { id: string };
  };
  const read = async (id: string) => (await t.http('GET', `/v1/goals/${id}`, { token })).body;
  const status = async (id: string) => (await t.http('GET', `/v1/goals/${id}/status`, { token })).body;

  it('starts a run per iteration with the idempotency key, follows it, and judges its output and cost', async () => {
    runtime.outcome = (run) => ({ variables: { green: run.id !== 'rt-run-1' }, costUsd: 0.25 });
    const g = await create({ bounds: { maxLoopIterations: 5, maxCostUsd: 10 } });
    await tick();
    expect(runtime.runs).toHaveLength(1);
    const post = runtime.requests.find((r) => r.method === 'POST')!;
    expect(post).toMatchObject({ url: '/v1/runs', auth: 'Bearer rt-secret-key', key: `${g.id}:1` });
    expect(runtime.runs[0].body).toMatchObject({ workflowId: 'release-check', inputs: { goalId: g.id, iteration: 1 } });
    expect((await status(g.id)).pendingRunId).toBe('rt-run-1');
    expect((await read(g.id)).progress.iterations).toBe(0);

    clock.advance(50);
    await tick();
    expect(await read(g.id)).toMatchObject({ state: 'active', progress: { iterations: 1, contributingRunIds: ['rt-run-1'] }, completion: { lastVerdict: { satisfied: false, runId: 'rt-run-1' } } });
    expect((await status(g.id)).accumulatedCostUsd).toBe(0.25);

    clock.advance(1000);
    await tick();
    clock.advance(50);
    await tick();
    expect(await read(g.id)).toMatchObject({ state: 'satisfied', progress: { iterations: 2, contributingRunIds: ['rt-run-1', 'rt-run-2'] } });
    expect(runtime.runs).toHaveLength(2);
  });

  it('gives the verifier judge the run’s agent.verified verdict and falls back to provider.usage cost', async () => {
    runtime.outcome = () => ({ variables: {}, verdict: 'fail' });
    const g = await create({ completion: { check: 'verifier', verifierRef: 'critic-1' }, criteria: undefined });
    await tick();
    clock.advance(50);
    await tick();
    expect((await read(g.id)).completion.lastVerdict).toMatchObject({ satisfied: false, confidence: 0.8 });
    expect((await status(g.id)).accumulatedCostUsd).toBeCloseTo(0.01);
    runtime.outcome = () => ({ variables: {}, verdict: 'pass' });
    clock.advance(1000);
    await tick();
    clock.advance(50);
    await tick();
    expect((await read(g.id)).state).toBe('satisfied');
  });

  it('a run waiting on a confidence-escalation interrupt escalates the goal', async () => {
    runtime.outcome = () => ({ variables: {}, escalate: true });
    const g = await create({});
    await tick();
    clock.advance(50);
    await tick();
    expect(await read(g.id)).toMatchObject({ state: 'escalated', progress: { iterations: 0, contributingRunIds: [expect.any(String)] } });
  });

  it('a runtime that is down spends no iteration, is retried with the same key, and never leaks the credential', async () => {
    runtime.outcome = () => ({ variables: { green: true } });
    runtime.down = true;
    const g = await create({});
    const before = runtime.requests.length;
    await tick();
    expect(runtime.requests.length).toBeGreaterThan(before);
    expect(runtime.runs.filter((r) => r.key.startsWith(g.id))).toHaveLength(0);
    expect((await read(g.id)).progress.iterations).toBe(0);
    expect(t.moduleRef.get(HealthService).snapshot()['goals.scheduler']).toMatchObject({ ok: false });
    runtime.down = false;
    clock.advance(500);
    await tick();
    clock.advance(50);
    await tick();
    expect((await read(g.id)).state).toBe('satisfied');
    expect(runtime.requests.filter((r) => r.method === 'POST' && r.key?.startsWith(g.id)).map((r) => r.key)).toEqual([`${g.id}:1`, `${g.id}:1`]);
    const everything = JSON.stringify([t.logs, await read(g.id), await status(g.id), (await t.http('GET', '/.well-known/openwop')).body]);
    expect(everything).not.toContain('rt-secret-key');
  });

  it('passes the plugin SDK goal-worker contract kit', async () => {
    runtime.outcome = () => ({ variables: { green: true }, costUsd: 0.5 });
    expect(await checkGoalWorkerContract(t.moduleRef.get(OpenWopRuntimeWorker), { waitMs: 1 })).toEqual([]);
  });

  it('runs the workflow the goal names instead of the configured one', async () => {
    runtime.outcome = () => ({ variables: { green: true } });
    const g = await create({ workflowId: 'release-check-v2' });
    const before = runtime.runs.length;
    await tick();
    expect(runtime.runs.slice(before).map((r) => r.body)).toEqual([expect.objectContaining({ workflowId: 'release-check-v2', inputs: expect.objectContaining({ goalId: g.id }) })]);
    await t.http('POST', `/v1/goals/${g.id}/abandon`, { token });
  });

  it('advertises schedule and commitment continuation (the runtime worker beside the local run engine\'s; neither has a heartbeat predicate)', async () => {
    expect(t.moduleRef.get(GoalExtensionsService).availableWorkerIds()).toEqual(['local-run', 'openwop-runtime']);
    const doc = await t.http('GET', '/.well-known/openwop');
    expect(doc.body.agents.goals.continuation).toEqual(['schedule', 'commitment', 'manual']);
  });
});
