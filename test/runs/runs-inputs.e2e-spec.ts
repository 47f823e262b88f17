/**
 * Declared inputs are checked: `POST /v1/runs` validates `inputs` against the chain's `parameters`
 * (its input JSON Schema) and refuses a run that does not satisfy them with 400 `validation_error`
 * listing every problem, writing nothing. A chain whose parameters admit anything takes any inputs.
 */
import { createTestApp, TestApp } from '../support/test-app';
import { chainPack } from './run-kit';
import { ArtifactRegistryService } from '../../src/platform/artifacts/artifact-registry.service';

const RELEASE = { nodes: [{ id: 'n', typeId: 'core.noop', config: { version: '{{inputs.version}}' } }] };

describe('runs: declared inputs are validated (e2e)', () => {
  let t: TestApp;
  let key: string;
  const runCount = async () => Number((await t.ds.query(`SELECT count(*)::int AS n FROM "run"`))[0].n);

  beforeAll(async () => {
    t = await createTestApp();
    key = await t.key({ scopes: ['runs:create', 'runs:read'] });
    const pack = chainPack('vendor.test.inputs', { 'vendor.test.release': RELEASE, 'vendor.test.free': RELEASE });
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
});
