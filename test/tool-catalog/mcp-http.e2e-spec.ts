import { createTestApp, TestApp } from '../support/test-app';
import { startHttpMcpFixture } from '../fixtures/mcp/http-fixture';

describe('mcp tool source over Streamable HTTP (e2e)', () => {
  let t: TestApp;
  let fixture: Awaited<ReturnType<typeof startHttpMcpFixture>>;
  let key: string;

  beforeAll(async () => {
    fixture = await startHttpMcpFixture('mcp-secret-token');
    t = await createTestApp({
      env: { OPENWOP_TEST_SEAMS: 'true' },
      configFile: {
        tools: {
          mcpServers: [
            { id: 'remote', transport: 'http', url: fixture.url, headers: { Authorization: 'Bearer mcp-secret-token' } },
            { id: 'denied', transport: 'http', url: fixture.url, headers: { Authorization: 'Bearer wrong' } },
          ],
        },
      },
    });
    key = await t.key({ scopes: ['tools:read', 'runs:create', 'runs:read'] });
  });

  afterAll(async () => {
    await t?.close();
    await fixture?.close();
  });

  it('lists the server\'s tools with the configured headers, unclassified as write, and never leaks the header', async () => {
    const res = await t.http('GET', '/v1/tools?source=mcp', { token: key });
    expect(res.status).toBe(200);
    expect(res.body).toEqual([
      {
        toolId: 'mcp:remote.lookup',
        source: 'mcp',
        title: 'lookup',
        description: 'Looks something up.',
        inputSchema: { type: 'object', properties: { q: { type: 'string' } } },
        safetyTier: 'write',
        replayPolicy: 'non-deterministic',
        egress: 'host-mediated',
      },
    ]);
    const ready = await t.http('GET', '/readyz');
    expect(ready.body.components['mcp-server:denied']).toMatchObject({ ok: false });
    expect(JSON.stringify(ready.body)).not.toContain('mcp-secret-token');
    expect(t.logs.join('\n')).not.toContain('mcp-secret-token');
  });

  it('runs a session against the HTTP server', async () => {
    const res = await t.http('POST', '/v1/host/sample/tools/session-run', { token: key, body: { toolId: 'mcp:remote.lookup', arguments: { q: 'x' } } });
    expect(res.status).toBe(200);
    const ev = await t.http('GET', `/v1/host/sample/test/runs/${res.body.runId}/events?type=tool.session.closed`, { token: key });
    expect(ev.body.events).toHaveLength(1);
    expect(ev.body.events[0].payload.outcome).toBe('completed');
  });
});
