/**
 * Schemas and patterns written by tenants: a clarification question's pattern that backtracks
 * (`^(a|a)*$`) cannot freeze a host process for every other tenant (the host runs in a process of its
 * own, so a frozen one fails this test instead of freezing it), and every schema a workflow-chain
 * pack carries is compiled at install: one that is not a JSON Schema, or whose pattern needs
 * backtracking, is refused with its path; a stored one that does not compile answers 422, never 500.
 */
import { ChildProcess, fork } from 'node:child_process';
import * as path from 'node:path';
import { createTestApp, TestApp } from '../support/test-app';
import { chainPack, installChains, waitForStatus } from './run-kit';
import { tempDirs } from '../support/temp-dirs';

const temp = tempDirs();

const ADVERSARIAL = 'a'.repeat(40) + '!'; // 2^40 backtracking steps against ^(a|a)*$

function askChain(schema: Record<string, unknown>): Record<string, unknown> {
  return { nodes: [{ id: 'ask', typeId: 'core.clarification', config: { questions: [{ id: 'code', question: 'Which code?', schema }] } }] };
}

function databaseUrl(db: string): string {
  const u = new URL(process.env.DATABASE_URL!);
  if (process.env.OPENWOP_TEST_DB_MODE !== 'embedded') u.pathname = `/${db}`;
  return u.toString();
}

/** A host in a process of its own on the test database, listening on an ephemeral port. */
async function startHost(url: string): Promise<{ proc: ChildProcess; base: string }> {
  const dir = temp.make('openwop-patterns-');
  const proc = fork(path.join(__dirname, 'replica-host.ts'), [], {
    execArgv: ['-r', '@swc-node/register'],
    env: {
      ...process.env,
      SWC_NODE_PROJECT: path.join(__dirname, '../../tsconfig.json'),
      DATABASE_URL: url,
      OPENWOP_DATA_DIR: dir,
      OPENWOP_SCHEDULER_ENABLED: 'false',
      OPENWOP_BOOTSTRAP_KEY: 'false',
      OPENWOP_INSTANCE_ID: 'patterns-host',
      LOG_LEVEL: 'error',
    },
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  const port = await new Promise<number>((resolve, reject) => {
    proc.once('message', (m: { port: number }) => resolve(m.port));
    proc.once('exit', (code) => reject(new Error(`the host exited with ${code}`)));
  });
  return { proc, base: `http://127.0.0.1:${port}` };
}

describe('author schemas: a pattern cannot hold the host', () => {
  let t: TestApp;
  let host: { proc: ChildProcess; base: string } | undefined;
  let author: string;
  let bystander: string;

  const call = async (method: string, url: string, token: string, body?: unknown, timeoutMs = 5000): Promise<{ status: number; body: any; ms: number }> => { // eslint-disable-line @typescript-eslint/no-explicit-any
    const started = performance.now();
    const res = await fetch(`${host!.base}${url}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined, ms: performance.now() - started };
  };

  beforeAll(async () => {
    t = await createTestApp();
    author = await t.key({ tenant: 'tenant-a', scopes: ['packs:publish', 'tools:read', 'runs:create', 'runs:read', 'approvals:respond'] });
    bystander = await t.key({ tenant: 'tenant-b', scopes: ['runs:read'] });
    host = await startHost(databaseUrl(t.databaseName));
  });

  afterAll(async () => {
    if (host?.proc.exitCode === null) host.proc.kill('SIGKILL');
    await t?.close();
  });

  it('answers another tenant within 500 ms (no held event loop) while an adversarial answer is checked against ^(a|a)*$, and the answer is refused at once', async () => {
    const installed = await call('POST', '/v1/installed-packs', author, chainPack('vendor.redos.pack', { 'vendor.redos.ask': askChain({ type: 'string', pattern: '^(a|a)*$' }) }));
    expect(installed.status).toBe(201);
    const run = await call('POST', '/v1/runs', author, { workflowId: 'vendor.redos.ask' });
    expect(run.status).toBe(201);
    const runId = run.body.runId as string;
    await waitForStatus(t, author, runId, ['waiting-input']);
    // Both routes once first (the resume schema compiled, the code paths warm), so what is timed is the match.
    expect((await call('GET', '/v1/whoami', bystander)).status).toBe(200);
    expect((await call('POST', `/v1/runs/${runId}/interrupts/ask`, author, { resumeValue: { answers: { code: 5 } } })).status).toBe(400);

    let settled = false;
    const answer = call('POST', `/v1/runs/${runId}/interrupts/ask`, author, { resumeValue: { answers: { code: ADVERSARIAL } } }, 10_000).finally(() => (settled = true));
    answer.catch(() => undefined);
    // The other tenant's requests while the answer is checked, and two after it.
    const latencies: number[] = [];
    for (let after = 0; after < 2; ) {
      const r = await call('GET', '/v1/whoami', bystander);
      expect(r.status).toBe(200);
      latencies.push(r.ms);
      if (settled) after++;
    }
    const answered = await answer;
    expect([answered.status, answered.body.error]).toEqual([400, 'validation_error']);
    expect(answered.body.details.problems).toEqual([{ path: '/resumeValue/answers/code', message: 'must match pattern "^(a|a)*$"' }]);
    expect(answered.ms).toBeLessThan(2000);
    // A held event loop shows as the pattern's whole run (seconds); 500 ms leaves room for a two-core machine busy with other test files (140 ms seen).
    expect(Math.max(...latencies)).toBeLessThan(500);
    // The run still waits for a good answer, which completes it.
    const ok = await call('POST', `/v1/runs/${runId}/interrupts/ask`, author, { resumeValue: { answers: { code: 'aaaa' } } });
    expect([ok.status, ok.body.interruptState]).toEqual([200, 'resolved']);
    expect((await waitForStatus(t, author, runId, ['completed', 'failed'])).status).toBe('completed');
  });
});

describe('author schemas: every schema a pack carries is compiled at install', () => {
  let t: TestApp;
  let publisher: string;
  const installedCount = async () => Number((await t.ds.query(`SELECT count(*) AS n FROM "installed_artifact" WHERE "kind" = 'workflow-chain-pack'`))[0].n);
  const codesAt = (problems: Array<{ path: string; code: string; message: string }>) => problems.map((p) => [p.path, p.code]);

  beforeAll(async () => {
    t = await createTestApp();
    publisher = await t.key({ scopes: ['packs:publish', 'tools:read', 'runs:create', 'runs:read', 'approvals:respond', 'proposals:propose', 'proposals:read', 'goals:write', 'goals:read', 'runs:cancel'] });
  });

  afterAll(async () => {
    await t?.close();
  });

  it('refuses a question schema that is not a JSON Schema, on the direct route (pack_invalid) and on a proposal (workflow_invalid), with its path', async () => {
    const before = await installedCount();
    const pack = chainPack('vendor.bogus.pack', { 'vendor.bogus.ask': askChain({ type: 'bogus' }) });
    const direct = await t.http('POST', '/v1/installed-packs', { token: publisher, body: pack });
    expect([direct.status, direct.body.error]).toEqual([422, 'pack_invalid']);
    expect(codesAt(direct.body.details.problems)).toEqual([['/chains/0/dag/nodes/0/config/questions/0/schema/type', 'invalid_schema']]);

    const created = await t.http('POST', '/v1/proposals', { token: publisher, body: { kind: 'workflow-chain-pack', provenance: { sourceRunIds: ['manual'] }, artifact: pack } });
    expect(created.status).toBe(201);
    const applied = await t.http('POST', `/v1/proposals/${created.body.id}/apply`, { token: publisher, body: {} });
    expect([applied.status, applied.body.error]).toEqual([422, 'workflow_invalid']);
    expect(codesAt(applied.body.details.problems)).toEqual([['/chains/0/dag/nodes/0/config/questions/0/schema/type', 'invalid_schema']]);
    expect(await installedCount()).toBe(before);
  });

  it('refuses patterns that need backtracking and input schemas that do not compile, each at its path', async () => {
    const pack = chainPack('vendor.patterns.pack', {
      'vendor.patterns.ask': askChain({ type: 'object', properties: { a: { type: 'string', pattern: '^(x+)\\1$' } }, patternProperties: { '^(?!tmp)': {} } }),
    });
    (pack.chains as Array<Record<string, unknown>>)[0].parameters = { type: 'object', properties: { n: { type: 'integr' } } };
    const r = await t.http('POST', '/v1/installed-packs', { token: publisher, body: pack });
    expect([r.status, r.body.error]).toEqual([422, 'pack_invalid']);
    expect(codesAt(r.body.details.problems).sort()).toEqual(
      [
        ['/chains/0/parameters/properties/n/type', 'invalid_schema'],
        ['/chains/0/dag/nodes/0/config/questions/0/schema/properties/a/pattern', 'invalid_schema'],
        ['/chains/0/dag/nodes/0/config/questions/0/schema/patternProperties/^(?!tmp)', 'invalid_schema'],
      ].sort(),
    );
    const messages = r.body.details.problems.map((p: { message: string }) => p.message).join(' | ');
    expect(messages).toMatch(/backreference/);
    expect(messages).toMatch(/lookahead/);
  });

  it('refuses a run of a stored chain whose question schema does not compile (422 workflow_invalid), not an unanswerable run', async () => {
    // Installed past the install checks, as the packs of the host-wide folder are.
    await installChains(t, 'default', 'vendor.stored.bogus', { 'vendor.stored.bogus-ask': askChain({ type: 'bogus' }) });
    const r = await t.http('POST', '/v1/runs', { token: publisher, body: { workflowId: 'vendor.stored.bogus-ask' } });
    expect([r.status, r.body.error]).toEqual([422, 'workflow_invalid']);
  });

  it('answers 422 resume_schema_invalid, not 500, when a stored resume schema no longer compiles', async () => {
    await installChains(t, 'default', 'vendor.stored.good', { 'vendor.stored.good-ask': askChain({ type: 'string' }) });
    const r = await t.http('POST', '/v1/runs', { token: publisher, body: { workflowId: 'vendor.stored.good-ask' } });
    expect(r.status).toBe(201);
    const runId = r.body.runId as string;
    await waitForStatus(t, publisher, runId, ['waiting-input']);
    await t.ds.query(`UPDATE "approval" SET "resume_schema" = '{"type": "bogus"}'::jsonb WHERE "run_id" = $1`, [runId]);
    const answered = await t.http('POST', `/v1/runs/${runId}/interrupts/ask`, { token: publisher, body: { resumeValue: { answers: { code: 'x' } } } });
    expect([answered.status, answered.body.error]).toEqual([422, 'resume_schema_invalid']);
    expect(answered.body.details.problems).toEqual([{ path: '/resumeSchema/type', message: expect.any(String) }]);
    expect((await t.http('POST', `/v1/runs/${runId}/cancel`, { token: publisher, body: {} })).status).toBeLessThan(300);
  });

  it('refuses goal criteria whose pattern needs backtracking (400, at its path)', async () => {
    const r = await t.http('POST', '/v1/goals', {
      token: publisher,
      body: { objective: 'o', completion: { check: 'host' }, criteria: { type: 'object', properties: { v: { type: 'string', pattern: '(?<=a)b' } } }, continuation: { mode: 'manual' }, bounds: { maxLoopIterations: 1 } },
    });
    expect([r.status, r.body.error]).toEqual([400, 'validation_error']);
    expect(r.body.details.violations).toEqual([{ path: '/criteria/properties/v/pattern', message: expect.stringMatching(/lookbehind/), keyword: 'schema' }]);
  });
});
