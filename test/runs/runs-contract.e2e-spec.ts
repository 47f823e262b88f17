/** Malformed requests, Idempotency-Key replays, tenant isolation, scopes, RFC 0058 bounds and approval gates of runs. */
import { createTestApp, TestApp } from '../support/test-app';
import { expectSchemaValid, installChains, noopChain, runEvents, waitForStatus } from './run-kit';

describe('runs: contract', () => {
  let t: TestApp;
  let key: string;
  const runCount = async () => Number((await t.ds.query(`SELECT count(*) AS n FROM "run"`))[0].n);

  beforeAll(async () => {
    t = await createTestApp();
    key = await t.key({ scopes: ['runs:create', 'runs:read', 'runs:cancel'] });
    await installChains(t, 'default', 'vendor.test.contract', {
      'vendor.test.chain': noopChain(2),
      'vendor.test.long': { nodes: [{ id: 'wait', typeId: 'core.delay', config: { ms: 5000 } }] },
      'vendor.test.loop': noopChain(6),
      'vendor.test.bad-type': { nodes: [{ id: 'x', typeId: 'vendor.nobody.serves' }] },
      'vendor.test.bad-config': { nodes: [{ id: 'x', typeId: 'core.delay', config: { ms: -1 } }] },
      'vendor.test.gated': {
        nodes: [{ id: 'prep', typeId: 'core.noop', config: { v: 1 } }, { id: 'gate', typeId: 'core.approval', config: { title: 'Ship it?' } }, { id: 'ship', typeId: 'core.noop', config: { shipped: true } }],
        edges: [{ from: 'prep', to: 'gate' }, { from: 'gate', to: 'ship' }],
      },
    });
  });

  afterAll(async () => {
    await t?.close();
  });

  it('answers every malformed body with a canonical 4xx and writes nothing', async () => {
    const before = await runCount();
    const cases: Array<[unknown, number, string]> = [
      [{}, 400, 'validation_error'],
      [{ workflowId: '' }, 400, 'validation_error'],
      [{ workflowId: 42 }, 400, 'validation_error'],
      [{ workflowId: 'vendor.test.chain', inputs: [] }, 400, 'validation_error'],
      [{ workflowId: 'vendor.test.chain', inputs: 'x' }, 400, 'validation_error'],
      [{ workflowId: 'vendor.test.chain', configurable: 3 }, 400, 'validation_error'],
      [{ workflowId: 'vendor.test.chain', unknownField: true }, 400, 'validation_error'],
      [{ workflowId: 'vendor.test.chain', tags: 'x' }, 400, 'validation_error'],
      [{ workflowId: 'vendor.test.chain', configurable: { runTimeoutMs: 0 } }, 400, 'validation_error'],
      [{ workflowId: 'vendor.test.chain', configurable: { runTimeoutMs: 1e15 } }, 400, 'validation_error'],
      [{ workflowId: 'vendor.test.chain', configurable: { maxLoopIterations: 1.5 } }, 400, 'validation_error'],
      [{ workflowId: 'vendor.test.chain', configurable: { maxCostUsd: -1 } }, 400, 'validation_error'],
      [{ workflowId: 'vendor.test.chain', tenantId: 'someone-else' }, 403, 'forbidden'],
      [{ workflowId: 'no.such.workflow' }, 404, 'not_found'],
      [{ workflowId: 'vendor.test.bad-type' }, 422, 'unknown_node_type'],
      [{ workflowId: 'vendor.test.bad-config' }, 422, 'workflow_invalid'],
      [[1, 2], 400, 'validation_error'],
    ];
    for (const [body, status, error] of cases) {
      const r = await t.http('POST', '/v1/runs', { token: key, body });
      expect([JSON.stringify(body), r.status, r.body.error, typeof r.body.message]).toEqual([JSON.stringify(body), status, error, 'string']);
      expect(Object.keys(r.body).every((k) => ['error', 'message', 'details'].includes(k))).toBe(true);
    }
    const raw = await t.http('POST', '/v1/runs', { token: key, rawBody: '{"workflowId":', headers: { 'content-type': 'application/json' } });
    expect(raw.status).toBe(400);
    const longKey = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.test.chain' }, headers: { 'idempotency-key': 'x'.repeat(300) } });
    expect([longKey.status, longKey.body.error]).toEqual([400, 'validation_error']);
    const badCancel = await t.http('POST', '/v1/runs/00000000-0000-4000-8000-000000000000/cancel', { token: key, body: { nope: 1 } });
    expect(badCancel.status).toBe(400);
    expect(await runCount()).toBe(before);
  });

  it('replays an Idempotency-Key: same body the same run, another body 409', async () => {
    const body = { workflowId: 'vendor.test.chain', inputs: { a: 1 } };
    const first = await t.http('POST', '/v1/runs', { token: key, body, headers: { 'idempotency-key': 'k-1' } });
    const second = await t.http('POST', '/v1/runs', { token: key, body: { inputs: { a: 1 }, workflowId: 'vendor.test.chain' }, headers: { 'idempotency-key': 'k-1' } });
    expect(first.status).toBe(201);
    expect(second.status).toBe(201);
    expect(second.body.runId).toBe(first.body.runId);
    const other = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.test.chain', inputs: { a: 2 } }, headers: { 'idempotency-key': 'k-1' } });
    expect([other.status, other.body.error]).toEqual([409, 'idempotency_key_mismatch']);
    const [{ n }] = await t.ds.query(`SELECT count(*) AS n FROM "run" WHERE "idempotency_key" = 'k-1'`);
    expect(Number(n)).toBe(1);
    // Concurrent first uses of one key still make one run.
    const results = await Promise.all([1, 2, 3, 4].map(() => t.http('POST', '/v1/runs', { token: key, body, headers: { 'idempotency-key': 'k-2' } })));
    expect(new Set(results.map((r) => r.body.runId)).size).toBe(1);
    await waitForStatus(t, key, first.body.runId, ['completed']);
  });

  it('writes a run whose first insert was lost, with or without an Idempotency-Key, and never crashes on the missing key', async () => {
    const lost = await t.key({ tenant: 'lost', scopes: ['runs:create', 'runs:read'] });
    await installChains(t, 'lost', 'vendor.test.lost', { 'vendor.test.chain': noopChain(1) });
    // A trigger that swallows the next insert of tenant "lost": INSERT ... RETURNING answers no row.
    await t.ds.query(`CREATE TABLE "lost_inserts" ("left" int NOT NULL)`);
    await t.ds.query(`CREATE FUNCTION "lose_insert"() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW."tenant" = 'lost' AND (SELECT "left" FROM "lost_inserts") > 0 THEN
          UPDATE "lost_inserts" SET "left" = "left" - 1;
          RETURN NULL;
        END IF;
        RETURN NEW;
      END $$`);
    await t.ds.query(`CREATE TRIGGER "lose_insert" BEFORE INSERT ON "run" FOR EACH ROW EXECUTE FUNCTION "lose_insert"()`);
    try {
      await t.ds.query(`INSERT INTO "lost_inserts" VALUES (1)`);
      const r = await t.http('POST', '/v1/runs', { token: lost, body: { workflowId: 'vendor.test.chain' } });
      expect([r.status, r.body.error]).toEqual([201, undefined]);
      expect((await waitForStatus(t, lost, r.body.runId, ['completed', 'failed'])).status).toBe('completed');
      expect((await t.ds.query(`SELECT "left" FROM "lost_inserts"`))[0].left).toBe(0);
      // Lost twice in a row: a clear 500, no TypeORM crash on an undefined key, and no run.
      await t.ds.query(`UPDATE "lost_inserts" SET "left" = 2`);
      const before = Number((await t.ds.query(`SELECT count(*) AS n FROM "run" WHERE "tenant" = 'lost'`))[0].n);
      const twice = await t.http('POST', '/v1/runs', { token: lost, body: { workflowId: 'vendor.test.chain' } });
      expect([twice.status, twice.body.error]).toEqual([500, 'internal_error']);
      expect(Number((await t.ds.query(`SELECT count(*) AS n FROM "run" WHERE "tenant" = 'lost'`))[0].n)).toBe(before);
      expect(t.logs.some((l) => l.includes('Undefined value encountered'))).toBe(false);
      expect(t.logs.some((l) => l.includes('the database wrote no row for the new run'))).toBe(true);
    } finally {
      await t.ds.query(`DROP TRIGGER "lose_insert" ON "run"`);
    }
  });

  it('keeps tenants apart: another tenant sees 404 and an empty list, 0 disclosures', async () => {
    const run = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.test.chain' } });
    const other = await t.key({ tenant: 'other', scopes: ['runs:create', 'runs:read', 'runs:cancel'] });
    const unknown = await t.http('GET', '/v1/runs/00000000-0000-4000-8000-000000000000', { token: other });
    for (const [m, p] of [['GET', `/v1/runs/${run.body.runId}`], ['POST', `/v1/runs/${run.body.runId}/cancel`], ['GET', `/v1/runs/${run.body.runId}/events/poll`], ['GET', `/v1/runs/${run.body.runId}/events`]] as const) {
      const r = await t.http(m, p, { token: other });
      expect([p, r.status, r.body]).toEqual([p, 404, unknown.body]);
    }
    expect((await t.http('GET', '/v1/runs', { token: other })).body.runs).toEqual([]);
    // The other tenant cannot run this tenant's chain either.
    expect((await t.http('POST', '/v1/runs', { token: other, body: { workflowId: 'vendor.test.chain' } })).status).toBe(404);
    const ws = await t.key({ tenant: 'default', workspace: 'w2', scopes: ['runs:read'] });
    expect((await t.http('GET', `/v1/runs/${run.body.runId}`, { token: ws })).status).toBe(404);
  });

  it('checks scopes per route (runs:cancel does not imply runs:read), 401 without credential', async () => {
    const readOnly = await t.key({ scopes: ['runs:read'] });
    const cancelOnly = await t.key({ scopes: ['runs:cancel'] });
    expect((await t.http('POST', '/v1/runs', { token: readOnly, body: { workflowId: 'vendor.test.chain' } })).status).toBe(403);
    expect((await t.http('GET', '/v1/runs', { token: cancelOnly })).status).toBe(403);
    expect((await t.http('POST', '/v1/runs', { body: { workflowId: 'vendor.test.chain' } })).status).toBe(401);
    expect((await t.http('POST', '/v1/runs', { token: 'hk_definitely_not_a_real_key_12345', body: { workflowId: 'vendor.test.chain' } })).status).toBe(401);
  });

  it('fails a run past runTimeoutMs with cap.breached run-duration and run_timeout', async () => {
    const r = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.test.long', configurable: { runTimeoutMs: 300 } } });
    const done = await waitForStatus(t, key, r.body.runId, ['failed', 'completed']);
    expect(done.status).toBe('failed');
    expect(done.error.code).toBe('run_timeout');
    const events = await runEvents(t, key, r.body.runId);
    expectSchemaValid(events);
    const breach = events.find((e) => e.type === 'cap.breached')!;
    expect(breach.payload.kind).toBe('run-duration');
    expect(breach.payload.limit).toBe(300);
    expect(breach.payload.observed as number).toBeGreaterThan(300);
  });

  it('fails a run that would execute more nodes than maxLoopIterations with loop_limit', async () => {
    const r = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.test.loop', configurable: { maxLoopIterations: 4 } } });
    const done = await waitForStatus(t, key, r.body.runId, ['failed', 'completed']);
    expect([done.status, done.error?.code]).toEqual(['failed', 'loop_limit']);
    const events = await runEvents(t, key, r.body.runId);
    expectSchemaValid(events);
    expect(events.filter((e) => e.type === 'node.completed')).toHaveLength(4);
    expect(events.find((e) => e.type === 'cap.breached')!.payload).toMatchObject({ kind: 'loop-iterations', limit: 4, observed: 5 });
  });

  it('suspends on an approval gate, resumes on grant, fails on deny', async () => {
    const approver = await t.key({ principal: 'approver', scopes: ['approvals:respond', 'runs:read'] });
    const gateOf = async (runId: string) => {
      const snap = await waitForStatus(t, key, runId, ['waiting-approval']);
      expect(snap.currentNodeId).toBe('gate');
      const events = await runEvents(t, key, runId);
      return events.find((e) => e.type === 'node.suspended')!.payload.interruptId as string;
    };
    const granted = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.test.gated' } });
    const gate = await gateOf(granted.body.runId);
    // The gate's item names the run step it holds, with the node's title and a link to the run's page.
    const item = await t.http('GET', `/v1/approvals/${gate}`, { token: approver });
    expect(item.body).toMatchObject({
      state: 'pending',
      title: 'Ship it?',
      subject: { kind: 'run-node', id: granted.body.runId },
      runId: granted.body.runId,
      nodeId: 'gate',
      workflowId: 'vendor.test.gated',
      link: `/console/#/runs/${granted.body.runId}`,
    });
    const listed = await t.http('GET', '/v1/approvals?state=pending', { token: approver });
    expect(listed.body.approvals.find((a: { id: string }) => a.id === gate)).toEqual(item.body);
    const g = await t.http('POST', `/v1/approvals/${gate}/grant`, { token: approver, body: {} });
    expect(g.status).toBeLessThan(300);
    const done = await waitForStatus(t, key, granted.body.runId, ['completed', 'failed']);
    expect(done.status).toBe('completed');
    expect(done.outputs).toEqual({ ship: { shipped: true } });
    const events = await runEvents(t, key, granted.body.runId);
    expectSchemaValid(events);
    expect(events.filter((e) => e.type === 'node.completed' && e.payload.nodeId === 'prep')).toHaveLength(1);

    const denied = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.test.gated' } });
    const gate2 = await gateOf(denied.body.runId);
    expect((await t.http('POST', `/v1/approvals/${gate2}/deny`, { token: approver, body: { reason: 'no' } })).status).toBeLessThan(300);
    const failed = await waitForStatus(t, key, denied.body.runId, ['completed', 'failed']);
    expect([failed.status, failed.error.code]).toEqual(['failed', 'approval_denied']);

    // Cancelling a run parked on a gate finishes it at once and closes the gate.
    const parked = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.test.gated' } });
    const gate3 = await gateOf(parked.body.runId);
    const c = await t.http('POST', `/v1/runs/${parked.body.runId}/cancel`, { token: key });
    expect(c.body.status).toBe('cancelled');
    expect((await t.http('GET', `/v1/approvals/${gate3}`, { token: approver })).body.state).toBe('cancelled');
  });
});
