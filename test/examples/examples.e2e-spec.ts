/**
 * Every example pack in examples/packs installs on a fresh host (only the tools a fresh host has)
 * and every chain in it runs to completion with the example inputs its `parameters` declare,
 * approving the gates it waits on; every example automation installs (a proposal, applied) and, once
 * due, starts a run that completes: the examples the README walks through never rot.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { createTestApp, TestApp } from '../support/test-app';
import { waitForStatus } from '../runs/run-kit';

const DIR = path.join(__dirname, '..', '..', 'examples', 'packs');
const FILES = fs.readdirSync(DIR).filter((f) => f.endsWith('.json')).sort();
const AUTOMATIONS_DIR = path.join(__dirname, '..', '..', 'examples', 'automations');
const AUTOMATIONS = fs.readdirSync(AUTOMATIONS_DIR).filter((f) => f.endsWith('.json')).sort();

interface Chain {
  chainId: string;
  parameters?: { properties?: Record<string, { examples?: unknown[] }> };
}

/** The inputs a chain's `parameters` give as examples (the first example of each property). */
function exampleInputs(chain: Chain): Record<string, unknown> {
  return Object.fromEntries(Object.entries(chain.parameters?.properties ?? {}).flatMap(([k, s]) => (s.examples?.length ? [[k, s.examples[0]]] : [])));
}

/** What each example is there to show, checked on its output (a new example needs a line here). */
const EXPECTED: Record<string, (outputs: Record<string, any>) => void> = { // eslint-disable-line @typescript-eslint/no-explicit-any
  'private.examples.parallel-tools': (o) => expect(o.joined).toEqual({ answer: 'hello world', first: { message: 'hello' }, second: { message: 'world' } }),
  'private.examples.release': (o) => expect(o.published).toMatchObject({ version: '2.4.0', approved: true }),
  'private.examples.greet': (o) => expect(o.greeting).toEqual({ text: 'Hello, Ada!' }),
  'private.examples.welcome': (o) => expect(o.welcome).toMatchObject({ greeting: 'Hello, Grace!' }),
};

describe('examples: every example pack installs and runs on a fresh host', () => {
  let t: TestApp;
  let key: string;

  beforeAll(async () => {
    // The scheduler ticks (fast), so installed automations fire.
    t = await createTestApp({ env: { OPENWOP_SCHEDULER_ENABLED: 'true', OPENWOP_SCHEDULER_TICK_MS: '200' } });
    key = await t.key({ roles: ['admin'] });
  });

  afterAll(async () => {
    await t?.close();
  });

  it('has example packs', () => {
    expect(FILES.length).toBeGreaterThanOrEqual(3);
  });

  it.each(FILES)('%s installs and each of its chains runs to completion', async (file) => {
    const text = fs.readFileSync(path.join(DIR, file), 'utf8');
    const installed = await t.http('POST', '/v1/installed-packs', { token: key, rawBody: text, headers: { 'content-type': 'application/json' } });
    expect([installed.status, installed.body.error, installed.body.details]).toEqual([201, undefined, undefined]);
    const chains = (JSON.parse(text) as { chains: Chain[] }).chains;
    for (const chain of chains) {
      const started = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: chain.chainId, inputs: exampleInputs(chain) } });
      expect(started.status).toBe(201);
      const runId = started.body.runId as string;
      let snap = await waitForStatus(t, key, runId, ['completed', 'failed', 'cancelled', 'waiting-approval'], 30_000);
      let gates = 0;
      while (snap.status === 'waiting-approval') {
        const pending = await t.http('GET', '/v1/approvals?state=pending', { token: key });
        const gate = (pending.body.approvals as Array<Record<string, any>>).find((a) => JSON.stringify(a).includes(runId)); // eslint-disable-line @typescript-eslint/no-explicit-any
        expect(gate).toBeDefined();
        expect((await t.http('POST', `/v1/approvals/${gate!.id}/grant`, { token: key, body: {} })).status).toBe(200);
        gates++;
        snap = await waitForStatus(t, key, runId, ['completed', 'failed', 'cancelled', 'waiting-approval'], 30_000);
        if (gates > 5) throw new Error('the run keeps waiting on approvals');
      }
      expect([chain.chainId, snap.status, snap.error]).toEqual([chain.chainId, 'completed', undefined]);
      expect(EXPECTED[chain.chainId]).toBeDefined();
      EXPECTED[chain.chainId](snap.outputs);
    }
  });

  it.each(AUTOMATIONS)('automation %s installs through a proposal and, once due, starts a run that completes', async (file) => {
    const artifact = JSON.parse(fs.readFileSync(path.join(AUTOMATIONS_DIR, file), 'utf8')) as { name: string; action: { workflowId: string } };
    const proposal = await t.http('POST', '/v1/proposals', { token: key, body: { kind: 'automation', provenance: { sourceRunIds: ['manual'] }, artifact } });
    expect(proposal.status).toBe(201);
    const applied = await t.http('POST', `/v1/proposals/${proposal.body.id}/apply`, { token: key, body: {} });
    expect([applied.status, applied.body.status]).toEqual([200, 'applied']);
    const listed = await t.http('GET', '/v1/automations', { token: key });
    expect(listed.body.automations.find((a: { name: string }) => a.name === artifact.name)).toMatchObject({ enabled: true, lastRunId: null });
    // Its first slot is a schedule interval away: bring it forward instead of waiting.
    await t.ds.query(`UPDATE "automation_schedule" SET "next_run_at" = now() WHERE "name" = $1`, [artifact.name]);
    const until = Date.now() + 30_000;
    let entry: Record<string, any> | undefined; // eslint-disable-line @typescript-eslint/no-explicit-any
    while (Date.now() < until) {
      entry = (await t.http('GET', '/v1/automations', { token: key })).body.automations.find((a: { name: string }) => a.name === artifact.name);
      if (entry?.lastRunId) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(entry?.lastRunId).toEqual(expect.any(String));
    const run = await waitForStatus(t, key, entry!.lastRunId, ['completed', 'failed', 'cancelled'], 30_000);
    expect([run.workflowId, run.status, run.error]).toEqual([artifact.action.workflowId, 'completed', undefined]);
    expect(run.outputs).toBeDefined();
  });
});
