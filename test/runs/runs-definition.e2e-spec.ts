/** `GET /v1/runs/{runId}/definition`: the chain a run executes (what the operator console draws), tenant-scoped. */
import { createTestApp, TestApp } from '../support/test-app';
import { installChains, waitForStatus } from './run-kit';

describe('runs: the definition a run executes', () => {
  let t: TestApp;
  let key: string;
  let otherTenant: string;
  let runId: string;

  beforeAll(async () => {
    t = await createTestApp();
    key = await t.key({ tenant: 'acme', scopes: ['runs:create', 'runs:read'] });
    otherTenant = await t.key({ tenant: 'globex', scopes: ['runs:create', 'runs:read'] });
    await installChains(t, 'acme', 'vendor.test.definition', {
      'vendor.test.diamond': {
        nodes: [
          { id: 'join', typeId: 'core.noop', config: { both: true } },
          { id: 'src', typeId: 'core.noop', config: { greeting: 'hello {{inputs.who}}' } },
          { id: 'left', typeId: 'core.noop' },
          { id: 'right', typeId: 'core.delay', config: { ms: 1 } },
        ],
        edges: [{ from: 'src', to: 'left' }, { from: 'src', to: 'right' }, { from: 'left', to: 'join' }, { from: 'right.delayedMs', to: 'join.waited' }],
      },
    });
    const created = await t.api(key).POST('/v1/runs', { body: { workflowId: 'vendor.test.diamond', inputs: { who: 'Ada' } } });
    expect(created.response.status).toBe(201);
    runId = created.data!.runId;
    await waitForStatus(t, key, runId, ['completed']);
  });

  afterAll(async () => {
    await t?.close();
  });

  it('answers every node (topological order, with its config) and every edge (with its ports) through the generated client', async () => {
    const r = await t.api(key).GET('/v1/runs/{runId}/definition', { params: { path: { runId } } });
    expect(r.response.status).toBe(200);
    expect(r.data).toEqual({
      runId,
      workflowId: 'vendor.test.diamond',
      nodes: [
        { id: 'src', typeId: 'core.noop', config: { greeting: 'hello {{inputs.who}}' } },
        { id: 'left', typeId: 'core.noop', config: {} },
        { id: 'right', typeId: 'core.delay', config: { ms: 1 } },
        { id: 'join', typeId: 'core.noop', config: { both: true } },
      ],
      edges: [
        { from: 'src', to: 'left' },
        { from: 'src', to: 'right' },
        { from: 'left', to: 'join' },
        { from: 'right', fromPort: 'delayedMs', to: 'join', toPort: 'waited' },
      ],
    });
  });

  it('is 404 for another tenant\'s run, an unknown id and a malformed id; 403 without runs:read; 401 without a credential', async () => {
    for (const [token, id] of [
      [otherTenant, runId],
      [key, '00000000-0000-4000-8000-000000000000'],
      [key, 'not-a-run-id'],
    ] as const) {
      const r = await t.http('GET', `/v1/runs/${id}/definition`, { token });
      expect([r.status, r.body.error]).toEqual([404, 'not_found']);
    }
    const creator = await t.key({ tenant: 'acme', scopes: ['runs:create'] });
    const forbidden = await t.http('GET', `/v1/runs/${runId}/definition`, { token: creator });
    expect([forbidden.status, forbidden.body.error]).toEqual([403, 'forbidden']);
    const anonymous = await t.http('GET', `/v1/runs/${runId}/definition`);
    expect([anonymous.status, anonymous.body.error]).toEqual([401, 'unauthenticated']);
  });
});
