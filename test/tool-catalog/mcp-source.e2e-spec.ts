import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createTestApp, TestApp } from '../support/test-app';
import { SchemaRegistry } from '../../src/platform/schemas/schema-registry';
import { CatalogClock } from '../../src/capabilities/tool-catalog/tool-catalog.service';
import { findBannedKeyword } from '../../src/capabilities/tool-catalog/compact-descriptor';

const FIXTURE = path.join(__dirname, '../fixtures/mcp/fixture-server.js');
const TTL = 60_000;

type Desc = Record<string, unknown> & { toolId: string };

describe('mcp tool source against a real stdio MCP server (e2e)', () => {
  let t: TestApp;
  let reader: string;
  let failReader: string;
  let tenantB: string;
  let stateFile: string;
  let offset = 0;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'openwop-mcp-'));

  const writeState = (s: Record<string, unknown>) => fs.writeFileSync(stateFile, JSON.stringify(s));
  const mcpIds = async (token = reader): Promise<string[]> => {
    const res = await t.http('GET', '/v1/tools?source=mcp', { token });
    expect(res.status).toBe(200);
    return res.body.map((d: Desc) => d.toolId);
  };

  beforeAll(async () => {
    stateFile = path.join(dir, 'fx.json');
    writeState({});
    // Starting the stdio MCP server (a node process loading the MCP SDK) can take more than the default 5 s on a loaded machine.
    t = await createTestApp({
      env: { OPENWOP_TEST_SEAMS: 'true', OPENWOP_TOOL_SOURCE_TIMEOUT_MS: '30000' },
      configFile: {
        tools: {
          cacheTtlMs: TTL,
          mcpServers: [
            {
              id: 'fx',
              transport: 'stdio',
              command: process.execPath,
              args: [FIXTURE],
              env: { MCP_FIXTURE_STATE: stateFile },
              classification: {
                echo: { safetyTier: 'read', replayPolicy: 'idempotent', egress: 'none' },
                fail: { safetyTier: 'pure', auth: { scopes: ['tools:mcp:fail'] } },
              },
            },
            { id: 'dead', transport: 'stdio', command: process.execPath, args: ['-e', 'process.exit(3)'] },
            { id: 'bonly', transport: 'stdio', command: process.execPath, args: [FIXTURE], tenants: ['tenant-b'] },
          ],
        },
      },
    });
    const clock = t.moduleRef.get(CatalogClock);
    jest.spyOn(clock, 'now').mockImplementation(() => Date.now() + offset);
    reader = await t.key({ scopes: ['tools:read', 'runs:create', 'runs:read'] });
    failReader = await t.key({ scopes: ['tools:read', 'runs:create', 'runs:read', 'tools:mcp:fail'] });
    tenantB = await t.key({ tenant: 'tenant-b', scopes: ['tools:read'] });
  });

  afterAll(async () => {
    await t?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('reads every page of tools/list and namespaces ids as mcp:<server>.<tool>', async () => {
    const ids = await mcpIds();
    // pageSize 2: paged_2 is on the third page.
    expect(ids).toEqual(['mcp:fx.echo', 'mcp:fx.paged_1', 'mcp:fx.paged_2', 'mcp:fx.read_file']);
  });

  it('classifies an unclassified tool as write whatever its annotations claim, and never serves annotations', async () => {
    const res = await t.http('GET', `/v1/tools/${encodeURIComponent('mcp:fx.read_file')}`, { token: reader });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      toolId: 'mcp:fx.read_file',
      source: 'mcp',
      title: 'Read file',
      description: 'Reads a file (claims to be read-only).',
      inputSchema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
      safetyTier: 'write',
      replayPolicy: 'non-deterministic',
      egress: 'host-mediated',
    });
    expect(SchemaRegistry.shared().validate('tool-descriptor', res.body)).toEqual([]);
  });

  it('applies the operator classification, including auth scopes', async () => {
    const echo = await t.http('GET', '/v1/tools/mcp%3Afx.echo', { token: reader });
    expect(echo.body).toMatchObject({ safetyTier: 'read', replayPolicy: 'idempotent', egress: 'none' });
    expect((await t.http('GET', '/v1/tools/mcp%3Afx.fail', { token: reader })).status).toBe(404);
    const fail = await t.http('GET', '/v1/tools/mcp%3Afx.fail', { token: failReader });
    expect(fail.body).toMatchObject({ safetyTier: 'pure', auth: { scopes: ['tools:mcp:fail'] } });
  });

  it('projects a server only for its tenants', async () => {
    expect((await mcpIds()).some((id) => id.startsWith('mcp:bonly.'))).toBe(false);
    expect((await mcpIds(tenantB)).filter((id) => id.startsWith('mcp:bonly.'))).toHaveLength(5);
    expect((await mcpIds(tenantB)).some((id) => id.startsWith('mcp:fx.'))).toBe(true);
  });

  it('leaves out a server that does not start, keeps the others, and reports it in /readyz', async () => {
    expect((await mcpIds()).some((id) => id.startsWith('mcp:dead.'))).toBe(false);
    const ready = await t.http('GET', '/readyz');
    expect(ready.status).toBe(200);
    expect(ready.body.status).toBe('degraded');
    expect(ready.body.components['mcp-server:dead']).toMatchObject({ ok: false });
    expect(ready.body.components['mcp-server:fx']).toMatchObject({ ok: true });
    const disco = await t.http('GET', '/.well-known/openwop');
    expect(disco.body.toolCatalog.sources).toContain('mcp');
  });

  it('flattens MCP input schemas in the compact view', async () => {
    const res = await t.http('GET', '/v1/tools/mcp%3Afx.echo?view=compact', { token: reader });
    expect(res.status).toBe(200);
    expect(findBannedKeyword(res.body.inputSchema)).toBeNull();
    expect(res.body.inputSchema).toEqual({
      type: 'object',
      properties: { message: { type: 'string', description: 'Text' }, mode: { enum: ['a', 'b'] } },
    });
  });

  it('serves the cached listing within the TTL and the new one after it', async () => {
    writeState({ extraTools: ['added_later'] });
    expect(await mcpIds()).not.toContain('mcp:fx.added_later');
    offset += TTL + 1;
    expect(await mcpIds()).toContain('mcp:fx.added_later');
  });

  it('drops only the tools of a server that goes down, and brings them back when it answers again', async () => {
    writeState({ down: true });
    offset += TTL + 1;
    const during = await t.http('GET', '/v1/tools', { token: reader });
    const ids = during.body.map((d: Desc) => d.toolId);
    expect(ids.some((id: string) => id.startsWith('mcp:fx.'))).toBe(false);
    expect(ids).toContain('x-host-openwop-echo');
    const ready = await t.http('GET', '/readyz');
    expect(ready.body.components['mcp-server:fx']).toMatchObject({ ok: false });

    writeState({});
    offset += TTL + 1;
    expect(await mcpIds()).toContain('mcp:fx.echo');
    expect((await t.http('GET', '/readyz')).body.components['mcp-server:fx']).toMatchObject({ ok: true });
  });

  it('runs an MCP tool session and brackets content-free call events', async () => {
    const res = await t.http('POST', '/v1/host/sample/tools/session-run', { token: reader, body: { toolId: 'mcp:fx.echo', arguments: { message: 'hi' } } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ runId: expect.any(String), sessionId: expect.any(String), toolId: 'mcp:fx.echo' });
    const ev = await t.http('GET', `/v1/host/sample/test/runs/${res.body.runId}/events`, { token: reader });
    // The session is a one-node core.tool run: its bracket sits inside the run's lifecycle events.
    const all = ev.body.events as Array<{ type: string; payload: Record<string, unknown> }>;
    expect(all.map((e) => e.type)).toEqual(['run.started', 'node.started', 'tool.session.opened', 'agent.toolCalled', 'agent.toolReturned', 'agent.toolCalled', 'agent.toolReturned', 'tool.session.closed', 'node.completed', 'run.completed']);
    const bracket = all.filter((e) => e.type.startsWith('tool.session.') || e.type.startsWith('agent.tool'));
    expect(bracket[2].payload).toEqual({
      agentId: 'openwop-host.run-engine',
      toolName: 'mcp:fx.echo',
      callId: bracket[1].payload.callId,
      status: 'ok',
      durationMs: expect.any(Number),
    });
    expect(bracket[1].payload.transport).toBe('mcp');
    expect(bracket[5].payload).toEqual({ sessionId: res.body.sessionId, toolId: 'mcp:fx.echo', outcome: 'completed' });
    // The bracket is content-free; arguments and results are the run's inputs and outputs, as in any run.
    expect(JSON.stringify(bracket)).not.toContain('hi"');
  });

  it('closes a session whose call fails with outcome failed', async () => {
    const res = await t.http('POST', '/v1/host/sample/tools/session-run', { token: failReader, body: { toolId: 'mcp:fx.fail' } });
    expect(res.status).toBe(200);
    const ev = await t.http('GET', `/v1/host/sample/test/runs/${res.body.runId}/events`, { token: failReader });
    const events = ev.body.events as Array<{ type: string; payload: Record<string, unknown> }>;
    expect(events.map((e) => e.type)).toEqual(['run.started', 'node.started', 'tool.session.opened', 'agent.toolCalled', 'agent.toolReturned', 'tool.session.closed', 'node.failed', 'run.failed']);
    expect(events[4].payload.status).toBe('error');
    expect(events[5].payload.outcome).toBe('failed');
    // The seam's run is a real engine run, failed.
    expect((await t.http('GET', `/v1/runs/${res.body.runId}`, { token: failReader })).body).toMatchObject({ status: 'failed', error: { code: expect.any(String) } });
  });
});
