/**
 * Declared inputs are checked: `POST /v1/runs` validates `inputs` against the chain's `parameters`
 * (its input JSON Schema) and refuses a run that does not satisfy them with 400 `validation_error`
 * listing every problem, writing nothing. A chain whose parameters admit anything takes any inputs.
 * A `core.tool` call's arguments are checked against the tool's `inputSchema` before the call: the
 * node fails `invalid_arguments` and the tool (here a live MCP server's) is never called.
 */
import { createTestApp, TestApp } from '../support/test-app';
import { chainPack } from './run-kit';
import { ArtifactRegistryService } from '../../src/platform/artifacts/artifact-registry.service';
import { startCurrentMcpServer } from '../fixtures/mcp/current-http-server';
import { waitForStatus } from './run-kit';

const RELEASE = { nodes: [{ id: 'n', typeId: 'core.noop', config: { version: '{{inputs.version}}' } }] };

describe('runs: declared inputs are validated (e2e)', () => {
  let t: TestApp;
  let key: string;
  let calc: Awaited<ReturnType<typeof startCurrentMcpServer>>;
  const runCount = async () => Number((await t.ds.query(`SELECT count(*)::int AS n FROM "run"`))[0].n);

  beforeAll(async () => {
    calc = await startCurrentMcpServer();
    t = await createTestApp({ configFile: { tools: { mcpServers: [{ id: 'calc', transport: 'http', url: calc.url }] } } });
    key = await t.key({ scopes: ['runs:create', 'runs:read', 'tools:read'] });
    const add = (a: unknown, b: unknown) => ({ nodes: [{ id: 'add', typeId: 'core.tool', config: { toolId: 'mcp:calc.add', arguments: { a, b } } }] });
    const pack = chainPack('vendor.test.inputs', { 'vendor.test.release': RELEASE, 'vendor.test.free': RELEASE, 'vendor.test.add-ok': add(2, 3), 'vendor.test.add-bad': add('two', 3) });
    const chains = pack.chains as Array<Record<string, unknown>>;
    chains[0].parameters = {
      type: 'object',
      required: ['version'],
      properties: { version: { type: 'string', pattern: '^\\d+\\.\\d+\\.\\d+$' }, dryRun: { type: 'boolean' } },
      additionalProperties: false,
    };
    await t.app.get(ArtifactRegistryService).install('workflow-chain-pack', pack, { tenant: 'default', principal: 'tester' }, 'test');
  }, 60_000);

  afterAll(async () => {
    await t?.close();
    await calc?.close();
  });

  it('refuses a run missing a required input, or with wrong ones, listing every problem and writing nothing', async () => {
    const before = await runCount();
    const missing = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.test.release', inputs: {} } });
    expect(missing.status).toBe(400);
    expect(missing.body.error).toBe('validation_error');
    expect(missing.body.details.problems).toEqual([expect.objectContaining({ path: '/inputs/version' })]);
    expect(missing.body.details.problems[0].message).toMatch(/version/);

    const wrong = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.test.release', inputs: { version: 'latest', dryRun: 'yes', extra: 1 } } });
    expect(wrong.status).toBe(400);
    const paths = wrong.body.details.problems.map((p: { path: string }) => p.path).sort();
    expect(paths).toEqual(expect.arrayContaining(['/inputs/version', '/inputs/dryRun']));
    expect(wrong.body.details.problems.length).toBeGreaterThanOrEqual(3);
    expect(await runCount()).toBe(before);
  });

  it('starts a run whose inputs satisfy the parameters, and any run of a chain whose parameters admit anything', async () => {
    const ok = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.test.release', inputs: { version: '2.4.0', dryRun: true } } });
    expect(ok.status).toBe(201);
    const free = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.test.free', inputs: { anything: [1, 2] } } });
    expect(free.status).toBe(201);
  });

  it('fails a core.tool node whose arguments do not satisfy the tool\'s inputSchema, without calling the tool', async () => {
    const bad = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.test.add-bad' } });
    expect(bad.status).toBe(201);
    const failed = await waitForStatus(t, key, bad.body.runId, ['failed', 'completed']);
    expect(failed.status).toBe('failed');
    expect(failed.error.code).toBe('invalid_arguments');
    expect(failed.error.message).toMatch(/\/arguments\/a/);
    expect(calc.requests.filter((r) => r.method === 'tools/call')).toHaveLength(0);
    const ok = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.test.add-ok' } });
    expect((await waitForStatus(t, key, ok.body.runId, ['failed', 'completed'])).status).toBe('completed');
    expect(calc.requests.filter((r) => r.method === 'tools/call')).toHaveLength(1);
  });
});
