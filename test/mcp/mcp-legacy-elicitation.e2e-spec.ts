/**
 * The legacy (2025-06-18) profile's out-of-band elicitation, driven by the official MCP SDK's 1.x
 * client: a client that declared elicitation at `initialize` (its session id carries it) and calls
 * a tool whose run stops on an approval or an elicitation step gets an `elicitation/create` request
 * on the call's own stream; its answer, POSTed back, resolves the interrupt (only for a caller
 * holding approvals:respond) and the call completes. A client that declared nothing, or a
 * non-approver's answer, leaves the interrupt open and the call answers isError naming the run.
 */
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { createTestApp, TestApp } from '../support/test-app';
import { installChains } from '../runs/run-kit';

const MOUNT = '/v1/host/openwop/mcp';
type Any = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const RELEASE = {
  nodes: [
    { id: 'expose', typeId: 'core.openwop.mcp.expose-tool', config: { name: 'release', inputSchema: { type: 'object', properties: { version: { type: 'string' } }, required: ['version'] } } },
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

async function legacyClient(base: string, key: string, answer?: (params: Any) => Any): Promise<{ client: LegacyClient; asked: Any[] }> {
  const asked: Any[] = [];
  const client = new LegacyClient({ name: 'legacy-elicitation-test', version: '1.0.0' }, answer ? { capabilities: { elicitation: {} } } : {});
  if (answer) {
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      asked.push(request.params as Any);
      return answer(request.params as Any) as never;
    });
  }
  await client.connect(new LegacyTransport(new URL(`${base}${MOUNT}`), { requestInit: { headers: { Authorization: `Bearer ${key}` } } }));
  return { client, asked };
}

describe('MCP legacy out-of-band elicitation (e2e, official 1.x client)', () => {
  let t: TestApp;
  let base: string;
  let approver: string;
  let intern: string;

  beforeAll(async () => {
    t = await createTestApp({ env: { OPENWOP_MCP_CALL_TIMEOUT_MS: '3000' } });
    await installChains(t, 'default', 'vendor.test.legacy-elicitation', { 'vendor.test.release': RELEASE, 'vendor.test.ask': ASK });
    approver = await t.key({ principal: 'agent', scopes: ['tools:read', 'runs:create', 'runs:read', 'approvals:respond'] });
    intern = await t.key({ principal: 'intern', scopes: ['tools:read', 'runs:create', 'runs:read'] });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const addr = t.app.getHttpServer().address();
    base = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
  }, 120_000);

  afterAll(async () => {
    await t?.close();
  });

  it('asks an approval out of band and completes the call on the approver\'s answer', async () => {
    const { client, asked } = await legacyClient(base, approver, () => ({ action: 'accept', content: { action: 'accept' } }));
    try {
      const res = (await client.callTool({ name: 'release', arguments: { version: '4.0.0' } })) as Any;
      expect(asked).toHaveLength(1);
      expect(asked[0]).toMatchObject({ message: 'Publish 4.0.0?', requestedSchema: { properties: { action: { enum: ['accept', 'reject'] } } } });
      expect(res).toMatchObject({ isError: false, structuredContent: { published: '4.0.0' } });
      const [run] = await t.ds.query(`SELECT "status" FROM "run" WHERE "id" = $1`, [res._meta['io.openwop/runId']]);
      expect(run.status).toBe('completed');
    } finally {
      await client.close();
    }
  });

  it('passes an elicitation step\'s answer through as its ElicitResult', async () => {
    const { client, asked } = await legacyClient(base, approver, () => ({ action: 'accept', content: { name: 'Ada' } }));
    try {
      const res = (await client.callTool({ name: 'ask_name', arguments: {} })) as Any;
      expect(asked[0]).toMatchObject({ message: 'What is your name?', requestedSchema: { properties: { name: { type: 'string' } } } });
      expect(res).toMatchObject({ isError: false, structuredContent: { action: 'accept', content: { name: 'Ada' } } });
    } finally {
      await client.close();
    }
  });

  it('a non-approver\'s answer advances nothing: the call answers isError and the gate stays', async () => {
    const { client, asked } = await legacyClient(base, intern, () => ({ action: 'accept', content: { action: 'accept' } }));
    try {
      const res = (await client.callTool({ name: 'release', arguments: { version: '5.0.0' } })) as Any;
      expect(asked).toHaveLength(1);
      expect(res.isError).toBe(true);
      const [run] = await t.ds.query(`SELECT "status" FROM "run" WHERE "id" = $1`, [res._meta['io.openwop/runId']]);
      expect(run.status).toBe('waiting-approval');
    } finally {
      await client.close();
    }
  });

  it('a client that declared no elicitation is never asked: isError naming the run, at once', async () => {
    const { client } = await legacyClient(base, approver);
    try {
      const res = (await client.callTool({ name: 'release', arguments: { version: '6.0.0' } })) as Any;
      expect(res.isError).toBe(true);
      expect(res.content[0].text).toMatch(/declared elicitation/);
    } finally {
      await client.close();
    }
  });

  it('refuses an answer whose id this mount did not sign for the caller', async () => {
    const r = await fetch(`${base}${MOUNT}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${approver}` },
      body: JSON.stringify({ jsonrpc: '2.0', id: 'forged', result: { action: 'accept', content: { action: 'accept' } } }),
    });
    expect(r.status).toBe(400);
    expect(((await r.json()) as Any).error.code).toBe(-32600);
  });
});
