/** A chain calling a real stdio MCP tool through core.tool, authorized with the run principal's scopes. */
import * as path from 'node:path';
import { createTestApp, TestApp } from '../support/test-app';
import { expectSchemaValid, installChains, runEvents, waitForStatus } from './run-kit';

const FIXTURE = path.join(__dirname, '../fixtures/mcp/fixture-server.js');

describe('runs: core.tool against a stdio MCP server', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp({
      // Starting the stdio server (a node process loading the MCP SDK) can take more than the default 5 s on a loaded machine.
      env: { OPENWOP_TOOL_SOURCE_TIMEOUT_MS: '30000' },
      configFile: {
        tools: {
          mcpServers: [
            {
              id: 'fx',
              transport: 'stdio',
              command: process.execPath,
              args: [FIXTURE],
              classification: { echo: { safetyTier: 'read', replayPolicy: 'idempotent', egress: 'none' }, fail: { safetyTier: 'pure', auth: { scopes: ['tools:mcp:fail'] } } },
            },
          ],
        },
      },
    });
    await installChains(t, 'default', 'vendor.test.tools', {
      'vendor.test.echo': {
        nodes: [
          { id: 'prep', typeId: 'core.noop', config: { word: 'hi {{inputs.name}}' } },
          { id: 'call', typeId: 'core.tool', config: { toolId: 'mcp:fx.echo', arguments: { said: '{{nodes.prep.word}}' } } },
        ],
        edges: [{ from: 'prep', to: 'call' }],
      },
      'vendor.test.hidden': { nodes: [{ id: 'call', typeId: 'core.tool.call', config: { toolId: 'mcp:fx.fail' } }] },
    });
  });

  afterAll(async () => {
    await t?.close();
  });

  it('calls the tool inside a tool.session bracket and passes its result on', async () => {
    const key = await t.key({ scopes: ['runs:create', 'runs:read', 'tools:read'] });
    const r = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.test.echo', inputs: { name: 'ada' } } });
    const done = await waitForStatus(t, key, r.body.runId, ['completed', 'failed'], 30_000);
    expect(done.status).toBe('completed');
    const out = JSON.stringify(done.outputs.call);
    expect(out).toContain('hi ada');
    const events = await runEvents(t, key, r.body.runId);
    expectSchemaValid(events);
    const types = events.map((e) => e.type);
    const i = (ty: string) => types.indexOf(ty);
    expect(i('node.started')).toBeLessThan(i('tool.session.opened'));
    expect(i('tool.session.opened')).toBeLessThan(i('agent.toolCalled'));
    expect(i('agent.toolCalled')).toBeLessThan(i('agent.toolReturned'));
    expect(i('agent.toolReturned')).toBeLessThan(i('tool.session.closed'));
    const closed = events.find((e) => e.type === 'tool.session.closed')!;
    expect(closed.payload.outcome).toBe('completed');
    // Content-free call events: the arguments are only hashed.
    expect(JSON.stringify(events.filter((e) => e.type.startsWith('agent.') || e.type.startsWith('tool.')))).not.toContain('hi ada');
  });

  it('refuses a tool the starter cannot see: the node fails tool_not_found', async () => {
    const key = await t.key({ scopes: ['runs:create', 'runs:read', 'tools:read'] });
    const r = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.test.hidden' } });
    const done = await waitForStatus(t, key, r.body.runId, ['completed', 'failed'], 30_000);
    expect([done.status, done.error.code]).toEqual(['failed', 'tool_not_found']);
    const events = await runEvents(t, key, r.body.runId);
    expect(events.map((e) => e.type)).not.toContain('agent.toolCalled');
  });
});
