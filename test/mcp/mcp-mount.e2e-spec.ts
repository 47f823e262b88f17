/**
 * The host as an MCP server, driven by the official MCP TypeScript SDK's clients: the current 2.x
 * client (revision 2026-07-28, stateless, MRTR handed back to the caller) and the 1.x client (the
 * 2025-06-18 `initialize` handshake). Exposed workflows and the caller's governed catalog (here the
 * tools of a live 2026-07-28 MCP server the host is a client of), arguments refused before any run,
 * an approval answered through MRTR by an approver and refused for a non-approver, tenants that see
 * different lists, unauthenticated callers refused with the protected-resource challenge. The core of
 * it again on an embedded engine in a process of its own.
 */
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { createTestApp, TestApp } from '../support/test-app';
import { HostProcess, startHostProcess } from '../support/host-process';
import { startCurrentMcpServer } from '../fixtures/mcp/current-http-server';
import { installChains } from '../runs/run-kit';

const MOUNT = '/v1/host/openwop/mcp';
const V = 'io.modelcontextprotocol/protocolVersion';
const C = 'io.modelcontextprotocol/clientCapabilities';

const GREET = {
  nodes: [
    { id: 'expose', typeId: 'core.openwop.mcp.expose-tool', config: { name: 'greet', description: 'Greets someone.', inputSchema: { type: 'object', properties: { who: { type: 'string', minLength: 1 } }, required: ['who'], additionalProperties: false } } },
    { id: 'say', typeId: 'core.noop', config: { greeting: 'hello {{inputs.who}}' } },
  ],
  edges: [{ from: 'expose', to: 'say' }],
};
const RELEASE = {
  nodes: [
    { id: 'expose', typeId: 'core.openwop.mcp.expose-tool', config: { name: 'release', description: 'Publishes a release once approved.', inputSchema: { type: 'object', properties: { version: { type: 'string' } }, required: ['version'] } } },
    { id: 'gate', typeId: 'core.approval', config: { title: 'Publish {{inputs.version}}?', allowSelfApproval: true } },
    { id: 'done', typeId: 'core.noop', config: { published: '{{inputs.version}}' } },
  ],
  edges: [{ from: 'expose', to: 'gate' }, { from: 'gate', to: 'done' }],
};
const ASK = {
  nodes: [
    { id: 'expose', typeId: 'core.openwop.mcp.expose-tool', config: { name: 'ask_name', inputSchema: { type: 'object', properties: {} } } },
    { id: 'ask', typeId: 'core.openwop.mcp.handle-elicitation', config: { message: 'What is your name?', requestedSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] } } },
  ],
  edges: [{ from: 'expose', to: 'ask' }],
};
const SLOW = {
  nodes: [
    { id: 'expose', typeId: 'core.openwop.mcp.expose-tool', config: { name: 'slow_tool' } },
    { id: 'wait', typeId: 'core.delay', config: { ms: 1500 } },
    { id: 'done', typeId: 'core.noop', config: { ok: true } },
  ],
  edges: [{ from: 'expose', to: 'wait' }, { from: 'wait', to: 'done' }],
};
const HIDDEN = { nodes: [{ id: 'n', typeId: 'core.noop', config: {} }] };
const OTHER = { nodes: [{ id: 'expose', typeId: 'core.openwop.mcp.expose-tool', config: { name: 'other_tenant_tool' } }] };

/** The 2.x client, pinned to 2026-07-28, handing input_required back (no auto-fulfilment). */
async function currentClient(base: string, key: string, elicitation = true): Promise<Client> {
  const client = new Client({ name: 'mount-test', version: '1.0.0' }, {
    capabilities: elicitation ? { elicitation: { form: {} } } : {},
    versionNegotiation: { mode: { pin: '2026-07-28' } },
    inputRequired: { autoFulfill: false },
  });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${base}${MOUNT}`), { requestInit: { headers: { Authorization: `Bearer ${key}` } } }));
  return client;
}

async function legacyClient(base: string, key: string): Promise<LegacyClient> {
  const client = new LegacyClient({ name: 'mount-test-legacy', version: '1.0.0' });
  await client.connect(new LegacyTransport(new URL(`${base}${MOUNT}`), { requestInit: { headers: { Authorization: `Bearer ${key}` } } }));
  return client;
}

async function rpc(base: string, key: string | undefined, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; headers: Headers; json: any }> { // eslint-disable-line @typescript-eslint/no-explicit-any
  const res = await fetch(`${base}${MOUNT}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...(key ? { authorization: `Bearer ${key}` } : {}), ...headers },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, json: text ? JSON.parse(text) : undefined };
}

const modern = (method: string, name?: string) => ({ 'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': method, ...(name ? { 'Mcp-Name': name } : {}) });
const meta = (caps: Record<string, unknown> = {}) => ({ _meta: { [V]: '2026-07-28', [C]: caps } });

describe('MCP server mount (e2e, official SDK clients)', () => {
  let t: TestApp;
  let base: string;
  let caller: string;
  let nonApprover: string;
  let otherTenant: string;
  let current: Awaited<ReturnType<typeof startCurrentMcpServer>>;

  beforeAll(async () => {
    current = await startCurrentMcpServer();
    t = await createTestApp({ openApi: false, configFile: { tools: { mcpServers: [{ id: 'calc', transport: 'http', url: current.url, classification: { add: { safetyTier: 'pure', replayPolicy: 'deterministic', egress: 'none' } } }] } } });
    await installChains(t, 'default', 'vendor.test.mcp-mount', { 'vendor.test.greet': GREET, 'vendor.test.release': RELEASE, 'vendor.test.ask': ASK, 'vendor.test.slow': SLOW, 'vendor.test.hidden': HIDDEN });
    await installChains(t, 'other', 'vendor.test.mcp-other', { 'vendor.test.other': OTHER });
    caller = await t.key({ principal: 'agent', scopes: ['tools:read', 'runs:create', 'runs:read', 'approvals:respond'] });
    nonApprover = await t.key({ principal: 'intern', scopes: ['tools:read', 'runs:create', 'runs:read'] });
    otherTenant = await t.key({ tenant: 'other', principal: 'agent', scopes: ['tools:read', 'runs:create', 'runs:read', 'approvals:respond'] });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const addr = t.app.getHttpServer().address();
    base = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
  }, 120_000);

  afterAll(async () => {
    await t?.close();
    await current?.close();
  });

  it('advertises the mount in discovery (both profiles, the path, the server half)', async () => {
    const d = await t.http('GET', '/.well-known/openwop');
    expect(d.body.mcp).toMatchObject({
      supported: true,
      serverUrls: [MOUNT],
      serverMount: { supported: true, transports: ['streamable-http'], elicitationBridge: true },
      protocolVersions: ['2026-07-28', '2025-06-18'],
      preferredVersion: '2026-07-28',
      profiles: ['mcp-2026-07-28', 'mcp-2025-06-18-legacy'],
      features: ['server-discover', 'mrtr', 'cacheable-lists'],
    });
    expect(d.body.mcpClient).toMatchObject({ supported: true, trustBoundary: 'untrusted' });
  });

  it('refuses an unauthenticated caller with 401 naming the protected-resource metadata, which is served', async () => {
    const r = await rpc(base, undefined, { jsonrpc: '2.0', id: 1, method: 'tools/list', params: meta() }, modern('tools/list'));
    expect(r.status).toBe(401);
    const challenge = r.headers.get('www-authenticate') ?? '';
    expect(challenge).toMatch(/^Bearer resource_metadata="http:\/\/127\.0\.0\.1:\d+\/\.well-known\/oauth-protected-resource\/v1\/host\/openwop\/mcp"/);
    const prm = await fetch(challenge.match(/resource_metadata="([^"]+)"/)![1]);
    expect(prm.status).toBe(200);
    expect(await prm.json()).toMatchObject({ resource: `${base}${MOUNT}`, bearer_methods_supported: ['header'] });
    // A wrong key is refused the same way, and nothing lists.
    expect((await rpc(base, 'owk_not_a_key', { jsonrpc: '2.0', id: 1, method: 'tools/list', params: meta() }, modern('tools/list'))).status).toBe(401);
  });

  it('the current client lists exposed workflows and governed catalog tools, sorted, private, and nothing else', async () => {
    const client = await currentClient(base, caller);
    try {
      const { tools } = await client.listTools();
      const names = tools.map((x) => x.name);
      expect(names).toEqual([...names].sort());
      expect(names).toEqual(expect.arrayContaining(['ask_name', 'greet', 'release', 'mcp_calc.add', 'mcp_calc.lookup']));
      expect(names).not.toContain('other_tenant_tool');
      expect(names.some((n) => n.includes('hidden'))).toBe(false);
      expect(tools.find((x) => x.name === 'mcp_calc.add')!._meta).toMatchObject({ 'io.openwop/toolId': 'mcp:calc.add', 'io.openwop/safetyTier': 'pure' });
    } finally {
      await client.close();
    }
    const raw = await rpc(base, caller, { jsonrpc: '2.0', id: 7, method: 'tools/list', params: meta() }, modern('tools/list'));
    expect(raw.status).toBe(200);
    expect(raw.json.result).toMatchObject({ resultType: 'complete', cacheScope: 'private' });
    expect(raw.json.result.ttlMs).toBeGreaterThanOrEqual(0);
    expect(raw.json.result._meta['io.modelcontextprotocol/serverInfo']).toMatchObject({ name: expect.any(String) });
  });

  it('two tenants see different lists', async () => {
    const list = async (key: string) => (await rpc(base, key, { jsonrpc: '2.0', id: 1, method: 'tools/list', params: meta() }, modern('tools/list'))).json.result.tools.map((x: { name: string }) => x.name);
    const mine = await list(caller);
    const theirs = await list(otherTenant);
    expect(theirs).toContain('other_tenant_tool');
    expect(theirs).not.toContain('greet');
    expect(mine).not.toContain('other_tenant_tool');
  });

  it('calls an exposed workflow as a durable run marked mcp and untrusted; a catalog tool through the host chain', async () => {
    const client = await currentClient(base, caller);
    try {
      const res = (await client.callTool({ name: 'greet', arguments: { who: 'Ada' } })) as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
      expect(res.isError).toBe(false);
      const runId = res._meta['io.openwop/runId'];
      expect(res.structuredContent).toEqual({ greeting: 'hello Ada' });
      const [run] = await t.ds.query(`SELECT "metadata", "status" FROM "run" WHERE "id" = $1`, [runId]);
      expect(run).toMatchObject({ status: 'completed', metadata: { transport: 'mcp', trustBoundary: 'untrusted' } });
      const events = await t.http('GET', `/v1/runs/${runId}/events`, { token: caller, headers: { accept: 'application/json' } });
      expect(events.body.events.find((e: { type: string }) => e.type === 'run.started').payload.transport).toBe('mcp');

      const sum = (await client.callTool({ name: 'mcp_calc.add', arguments: { a: 2, b: 3 } })) as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
      expect(sum.isError).toBe(false);
      expect(JSON.stringify(sum.structuredContent)).toContain('5');
    } finally {
      await client.close();
    }
  });

  it('streams progress notifications of a long call on the request\'s own stream, then its answer', async () => {
    const res = await fetch(`${base}${MOUNT}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${caller}`, ...modern('tools/call', 'slow_tool') },
      body: JSON.stringify({ jsonrpc: '2.0', id: 42, method: 'tools/call', params: { name: 'slow_tool', arguments: {}, _meta: { [V]: '2026-07-28', [C]: {}, progressToken: 'p-1' } } }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const messages = (await res.text()).split('\n\n').filter((b) => b.includes('data: ')).map((b) => JSON.parse(b.slice(b.indexOf('data: ') + 6)));
    const progress = messages.filter((m) => m.method === 'notifications/progress');
    expect(progress.length).toBeGreaterThan(0);
    expect(progress[0].params).toMatchObject({ progressToken: 'p-1', progress: expect.any(Number) });
    const last = messages[messages.length - 1];
    expect(last).toMatchObject({ id: 42, result: { resultType: 'complete', isError: false, structuredContent: { ok: true } } });
    // Without a progress token the same call answers one JSON body.
    const plain = await rpc(base, caller, { jsonrpc: '2.0', id: 43, method: 'tools/call', params: { name: 'slow_tool', arguments: {}, ...meta() } }, modern('tools/call', 'slow_tool'));
    expect(plain.json.result.structuredContent).toEqual({ ok: true });
  });

  it('refuses malformed arguments with -32602 and the violations before any run exists', async () => {
    const before = Number((await t.ds.query(`SELECT count(*)::int AS n FROM "run"`))[0].n);
    const r = await rpc(base, caller, { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'greet', arguments: { who: 7, extra: true }, ...meta() } }, modern('tools/call', 'greet'));
    expect(r.status).toBe(200);
    expect(r.json.error.code).toBe(-32602);
    expect(r.json.error.data.violations.length).toBeGreaterThan(0);
    const after = Number((await t.ds.query(`SELECT count(*)::int AS n FROM "run"`))[0].n);
    expect(after).toBe(before);
  });

  it('an approval is asked through MRTR and resolved by an approver; a non-approver is refused and the gate stays', async () => {
    const client = await currentClient(base, caller);
    try {
      const first = (await client.callTool({ name: 'release', arguments: { version: '2.0.0' } }, { allowInputRequired: true } as never)) as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
      expect(first.resultType).toBe('input_required');
      const [key] = Object.keys(first.inputRequests);
      expect(first.inputRequests[key]).toMatchObject({ method: 'elicitation/create', params: { mode: 'form', message: 'Publish 2.0.0?' } });
      const done = (await client.callTool({ name: 'release', arguments: { version: '2.0.0' }, requestState: first.requestState, inputResponses: { [key]: { action: 'accept', content: { action: 'accept' } } } } as never, { allowInputRequired: true } as never)) as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
      expect(done.isError).toBe(false);
      expect(done.structuredContent).toEqual({ published: '2.0.0' });
      // Used once: the same state again is refused.
      const again = await rpc(base, caller, { jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'release', arguments: { version: '2.0.0' }, requestState: first.requestState, inputResponses: { [key]: { action: 'accept', content: { action: 'accept' } } }, ...meta({ elicitation: {} }) } }, modern('tools/call', 'release'));
      expect(again.json.error.code).toBe(-32602);
    } finally {
      await client.close();
    }

    // A tool that asks a person needs the caller's elicitation: refused -32021 before any run.
    const runsBefore = Number((await t.ds.query(`SELECT count(*)::int AS n FROM "run"`))[0].n);
    const noCap = await rpc(base, nonApprover, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'release', arguments: { version: '3.0.0' }, ...meta() } }, modern('tools/call', 'release'));
    expect([noCap.status, noCap.json.error.code, noCap.json.error.data]).toEqual([400, -32021, { requiredCapabilities: ['elicitation'] }]);
    expect(Number((await t.ds.query(`SELECT count(*)::int AS n FROM "run"`))[0].n)).toBe(runsBefore);

    const first = await rpc(base, nonApprover, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'release', arguments: { version: '3.0.0' }, ...meta({ elicitation: {} }) } }, modern('tools/call', 'release'));
    expect(first.json.result.resultType).toBe('input_required');
    const key = Object.keys(first.json.result.inputRequests)[0];
    const runId = first.json.result._meta['io.openwop/runId'];
    const refused = await rpc(base, nonApprover, { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'release', arguments: { version: '3.0.0' }, requestState: first.json.result.requestState, inputResponses: { [key]: { action: 'accept', content: { action: 'accept' } } }, ...meta({ elicitation: {} }) } }, modern('tools/call', 'release'));
    expect(refused.status).toBe(403);
    expect(refused.json.error.data.requiredScopes).toEqual(['approvals:respond']);
    const [run] = await t.ds.query(`SELECT "status" FROM "run" WHERE "id" = $1`, [runId]);
    expect(run.status).toBe('waiting-approval');
    // Another caller cannot reuse the approver-less caller's state either: it is bound to its principal.
    const stolen = await rpc(base, caller, { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'release', arguments: { version: '3.0.0' }, requestState: first.json.result.requestState, inputResponses: { [key]: { action: 'accept', content: { action: 'accept' } } }, ...meta({ elicitation: {} }) } }, modern('tools/call', 'release'));
    expect(stolen.json.error).toMatchObject({ code: -32602, data: { reason: 'bind' } });
  });

  it('a handle-elicitation step asks through MRTR and completes on the answer; a forged state is refused', async () => {
    const first = await rpc(base, caller, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'ask_name', arguments: {}, ...meta({ elicitation: {} }) } }, modern('tools/call', 'ask_name'));
    const key = Object.keys(first.json.result.inputRequests)[0];
    expect(first.json.result.inputRequests[key].params.requestedSchema).toMatchObject({ properties: { name: { type: 'string' } } });
    const forged = await rpc(base, caller, { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'ask_name', arguments: {}, requestState: 'forged', inputResponses: { [key]: { action: 'accept', content: { name: 'Eve' } } }, ...meta({ elicitation: {} }) } }, modern('tools/call', 'ask_name'));
    expect(forged.json.error.code).toBe(-32602);
    const done = await rpc(base, caller, { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'ask_name', arguments: {}, requestState: first.json.result.requestState, inputResponses: { [key]: { action: 'accept', content: { name: 'Ada' } } }, ...meta({ elicitation: {} }) } }, modern('tools/call', 'ask_name'));
    expect(done.json.result).toMatchObject({ resultType: 'complete', isError: false, structuredContent: { action: 'accept', content: { name: 'Ada' } } });
  });

  it('applies the wire rules: agreement before selection, removed methods, the version list', async () => {
    const mismatch = await rpc(base, caller, { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: { [V]: '2025-06-18', [C]: {} } } }, modern('tools/list'));
    expect([mismatch.status, mismatch.json.error.code]).toEqual([400, -32020]);
    const name = await rpc(base, caller, { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'greet', arguments: { who: 'x' }, ...meta() } }, modern('tools/call', 'not-greet'));
    expect([name.status, name.json.error.code]).toEqual([400, -32020]);
    const unsupported = await rpc(base, caller, { jsonrpc: '2.0', id: 3, method: 'tools/list', params: { _meta: { [V]: '1999-01-01', [C]: {} } } }, { 'MCP-Protocol-Version': '1999-01-01', 'Mcp-Method': 'tools/list' });
    expect([unsupported.status, unsupported.json.error.code]).toEqual([400, -32022]);
    expect(unsupported.json.error.data).toEqual({ supported: ['2026-07-28', '2025-06-18'], requested: '1999-01-01' });
    const init = await rpc(base, caller, { jsonrpc: '2.0', id: 4, method: 'initialize', params: meta() }, modern('initialize'));
    expect([init.status, init.json.error.code]).toEqual([404, -32601]);
    const discover = await rpc(base, caller, { jsonrpc: '2.0', id: 5, method: 'server/discover', params: meta() }, modern('server/discover'));
    expect(discover.json.result).toMatchObject({ resultType: 'complete', supportedVersions: ['2026-07-28', '2025-06-18'], cacheScope: 'public' });
    const batch = await rpc(base, caller, [{ jsonrpc: '2.0', id: 1, method: 'ping' }]);
    expect([batch.status, batch.json.error.code]).toEqual([400, -32600]);
    const notification = await rpc(base, caller, { jsonrpc: '2.0', method: 'notifications/initialized' });
    expect(notification.status).toBe(202);
  });

  it('the 1.x client connects through the 2025-06-18 handshake, lists and calls', async () => {
    const client = await legacyClient(base, caller);
    try {
      expect(client.getServerVersion()?.name).toBeTruthy();
      const { tools } = await client.listTools();
      expect(tools.map((x) => x.name)).toEqual(expect.arrayContaining(['greet', 'release']));
      const res = (await client.callTool({ name: 'greet', arguments: { who: 'Grace' } })) as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
      expect(res.isError).toBe(false);
      expect(res.structuredContent).toEqual({ greeting: 'hello Grace' });
      await expect(client.callTool({ name: 'greet', arguments: {} })).rejects.toThrow(/Invalid arguments/);
    } finally {
      await client.close();
    }
  });
});

describe('MCP server mount under protocol major 2 (e2e)', () => {
  let t: TestApp;
  let base: string;
  let key: string;
  const V2 = '/host/openwop/mcp';
  const post = (body: unknown, headers: Record<string, string>) =>
    fetch(`${base}${V2}`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json', authorization: `Bearer ${key}`, ...headers }, body: JSON.stringify(body) }).then(async (r) => ({ status: r.status, json: (await r.json()) as any })); // eslint-disable-line @typescript-eslint/no-explicit-any

  beforeAll(async () => {
    t = await createTestApp({ openApi: false, env: { OPENWOP_PROTOCOL_MAJORS: '1,2' } });
    await installChains(t, 'default', 'vendor.test.mcp-v2', { 'vendor.test.release': RELEASE });
    key = await t.key({ scopes: ['tools:read', 'runs:create', 'runs:read', 'approvals:respond'] });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const addr = t.app.getHttpServer().address();
    base = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
  }, 60_000);

  afterAll(async () => {
    await t?.close();
  });

  it('the v2 discovery root carries the mcp record naming the current-only mount, which serves 2026-07-28 alone', async () => {
    const d = (await fetch(`${base}/.well-known/openwop`, { headers: { 'OpenWOP-Version': '2.0' } }).then((r) => r.json())) as { mcp: Record<string, any> }; // eslint-disable-line @typescript-eslint/no-explicit-any
    expect(d.mcp).toMatchObject({ revisions: ['2026-07-28'], preferredVersion: '2026-07-28', minimumRevision: '2026-07-28', profiles: ['mcp-2026-07-28'], serverUrls: [`${base}${V2}`], serverMount: { transports: ['streamable-http'] } });
    expect(d.mcp.supported).toBeUndefined();
    const discover = await post({ jsonrpc: '2.0', id: 1, method: 'server/discover', params: meta() }, modern('server/discover'));
    expect(discover.json.result.supportedVersions).toEqual(d.mcp.revisions);
    const headerless = await post({ jsonrpc: '2.0', id: 2, method: 'tools/list' }, {});
    expect([headerless.status, headerless.json.error.code]).toEqual([400, -32022]);
    const legacy = await post({ jsonrpc: '2.0', id: 3, method: 'tools/list' }, { 'MCP-Protocol-Version': '2025-06-18' });
    expect([legacy.status, legacy.json.error.code, legacy.json.error.data.supported]).toEqual([400, -32022, ['2026-07-28']]);
  });

  it('keys an input request by the tenant-bound interruptId, and the retry is read under that key', async () => {
    const first = await post({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'release', arguments: { version: '9.0.0' }, ...meta({ elicitation: {} }) } }, modern('tools/call', 'release'));
    const [k] = Object.keys(first.json.result.inputRequests);
    expect(k).toMatch(/^default\/[A-Za-z0-9._~-]{16,128}$/);
    const done = await post({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'release', arguments: { version: '9.0.0' }, requestState: first.json.result.requestState, inputResponses: { [k]: { action: 'accept', content: { action: 'accept' } } }, ...meta({ elicitation: {} }) } }, modern('tools/call', 'release'));
    expect(done.json.result).toMatchObject({ resultType: 'complete', isError: false, structuredContent: { published: '9.0.0' } });
    expect(done.json.result._meta['io.openwop/runId']).toMatch(/^default\//);
  });
});

describe('MCP server mount turned off (e2e)', () => {
  let t: TestApp;
  let key: string;

  beforeAll(async () => {
    t = await createTestApp({ openApi: false, env: { OPENWOP_MCP_SERVER: 'false' }, configFile: { tools: { mcpServers: [{ id: 'calc', transport: 'http', url: 'http://127.0.0.1:9/mcp' }] } } });
    key = await t.key({ scopes: ['tools:read', 'runs:create'] });
  }, 60_000);

  afterAll(async () => {
    await t?.close();
  });

  it('serves no mount and advertises the MCP client alone', async () => {
    const d = await t.http('GET', '/.well-known/openwop');
    expect(d.body.mcp).toEqual({
      supported: true,
      protocolVersions: ['2026-07-28', '2025-06-18'],
      preferredVersion: '2026-07-28',
      profiles: ['mcp-2026-07-28'],
      features: ['server-discover', 'mrtr', 'cacheable-lists'],
    });
    const r = await t.http('POST', MOUNT, { token: key, body: { jsonrpc: '2.0', id: 1, method: 'ping' } });
    expect(r.status).toBe(404);
  });
});

describe('MCP server mount on an embedded engine (e2e)', () => {
  let h: HostProcess;

  beforeAll(async () => {
    h = await startHostProcess({ scopes: ['tools:read', 'runs:create', 'runs:read', 'approvals:respond'], chains: { tenant: 'default', name: 'vendor.test.mcp-mount', chains: { 'vendor.test.greet': GREET, 'vendor.test.release': RELEASE } } });
  }, 180_000);

  afterAll(async () => {
    await h?.close();
  });

  it('lists, calls, and resolves an approval through MRTR with the official client', async () => {
    const client = await currentClient(h.base, h.key);
    try {
      const { tools } = await client.listTools();
      expect(tools.map((x) => x.name)).toEqual(expect.arrayContaining(['greet', 'release']));
      const res = (await client.callTool({ name: 'greet', arguments: { who: 'Ada' } })) as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
      expect(res.structuredContent).toEqual({ greeting: 'hello Ada' });
      const first = (await client.callTool({ name: 'release', arguments: { version: '1.0.0' } }, { allowInputRequired: true } as never)) as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
      expect(first.resultType).toBe('input_required');
      const [key] = Object.keys(first.inputRequests);
      const done = (await client.callTool({ name: 'release', arguments: { version: '1.0.0' }, requestState: first.requestState, inputResponses: { [key]: { action: 'accept', content: { action: 'accept' } } } } as never, { allowInputRequired: true } as never)) as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
      expect(done.structuredContent).toEqual({ published: '1.0.0' });
    } finally {
      await client.close();
    }
  });
});
