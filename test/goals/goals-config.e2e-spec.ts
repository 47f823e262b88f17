/** The `goals` section of OPENWOP_CONFIG: what it changes, and that a malformed one stops the host. */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ConfigError, loadHostConfig } from '../../src/platform/config/host-config';
import { createTestApp, TestApp } from '../support/test-app';

describe('goals configuration', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp({ configFile: { goals: { judge: 'verifier', requiresBounds: false, limits: { maxLoopIterations: 7, maxRunDurationMs: 60_000, maxBudgetCostUsd: 2.5 } } } });
  });

  afterAll(async () => {
    await t?.close();
  });

  it('advertises the configured judge, bounds policy and limits', async () => {
    const doc = await t.http('GET', '/.well-known/openwop');
    // The local run engine's worker serves schedule and commitment continuation.
    expect(doc.body.agents.goals).toEqual({ judge: 'verifier', continuation: ['schedule', 'commitment', 'manual'], requiresBounds: false });
    expect(doc.body.limits).toMatchObject({ maxLoopIterations: 7, maxRunDurationMs: 60_000, maxBudgetCostUsd: 2.5 });
  });

  it('accepts a goal without bounds when bounds are not required, bounded by the host limits anyway', async () => {
    const token = await t.key({ tenant: 'acme', principal: 'alice', scopes: ['goals:write'] });
    const res = await t.http('POST', '/v1/goals', { token, body: { objective: 'watch the queue', completion: { check: 'verifier' }, continuation: { mode: 'manual' } } });
    expect(res.status).toBe(201);
    expect(res.body.bounds).toEqual({ maxLoopIterations: 7, runTimeoutMs: 60_000, maxCostUsd: 2.5 });
  });

  it('serves the seam paths only with OPENWOP_TEST_SEAMS=true (404 here), the normative paths always', async () => {
    const token = await t.key({ tenant: 'acme', principal: 'alice', scopes: ['goals:read', 'goals:write'] });
    expect((await t.http('GET', '/v1/host/sample/goals', { token })).status).toBe(404);
    expect((await t.http('POST', '/v1/host/sample/goals', { token, body: {} })).status).toBe(404);
    expect((await t.http('GET', '/v1/goals', { token })).status).toBe(200);
  });

  it.each([
    ['an unknown key', { goals: { colour: 'green' } }],
    ['a zero iteration limit', { goals: { limits: { maxLoopIterations: 0 } } }],
    ['an unknown judge', { goals: { judge: 'vibes' } }],
    ['a runtime without workflowId', { goals: { runtime: { baseUrl: 'http://127.0.0.1:1' } } }],
    ['a runtime URL that is not http(s)', { goals: { runtime: { baseUrl: 'file:///etc/passwd', workflowId: 'w' } } }],
  ])('refuses to start with %s', (_name, configFile) => {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'goals-cfg-')), 'config.json');
    fs.writeFileSync(file, JSON.stringify(configFile));
    expect(() => loadHostConfig({ OPENWOP_CONFIG: file })).toThrow(ConfigError);
    expect(() => loadHostConfig({ OPENWOP_CONFIG: file })).toThrow(/goals/);
  });
});
