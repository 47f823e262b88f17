/**
 * Interrupts whose answer an MCP form must not carry (RFC 0199 §D.2(d)): a clarification with a
 * nested answer and one with a secret (writeOnly, format password) are asked in URL mode (the host's
 * page for the run) of a client that declared URL-mode elicitation, and answered isError otherwise:
 * never form mode. Driven by the official 2.x client (revision 2026-07-28, MRTR handed back), plus
 * the conformance fixtures conformance-clarification(-nested, -sensitive) on the v2 mount.
 */
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { createTestApp, TestApp } from '../support/test-app';
import { installChains } from '../runs/run-kit';

const MOUNT = '/v1/host/openwop/mcp';
const V2 = '/host/openwop/mcp';

const SHIP = {
  nodes: [
    { id: 'expose', typeId: 'core.openwop.mcp.expose-tool', config: { name: 'ship', inputSchema: { type: 'object', properties: {} } } },
    { id: 'ask', typeId: 'core.clarification', config: { title: 'Where to?', questions: [{ id: 'address', question: 'Address?', schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } }] } },
  ],
  edges: [{ from: 'expose', to: 'ask' }],
};
const UNLOCK = {
  nodes: [
    { id: 'expose', typeId: 'core.openwop.mcp.expose-tool', config: { name: 'unlock', inputSchema: { type: 'object', properties: {} } } },
    { id: 'ask', typeId: 'core.clarification', config: { title: 'PIN?', questions: [{ id: 'pin', question: 'PIN?', schema: { type: 'string', format: 'password', writeOnly: true } }] } },
  ],
  edges: [{ from: 'expose', to: 'ask' }],
};

type Any = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

async function client(base: string, key: string, elicitation: Record<string, unknown>): Promise<Client> {
  const c = new Client({ name: 'url-mode-test', version: '1.0.0' }, { capabilities: { elicitation } as never, versionNegotiation: { mode: { pin: '2026-07-28' } }, inputRequired: { autoFulfill: false } });
  await c.connect(new StreamableHTTPClientTransport(new URL(`${base}${MOUNT}`), { requestInit: { headers: { Authorization: `Bearer ${key}` } } }));
  return c;
}

describe('MCP URL-mode elicitation for nested and secret answers (e2e)', () => {
  let t: TestApp;
  let base: string;
  let key: string;

  beforeAll(async () => {
    t = await createTestApp({ env: { OPENWOP_PROTOCOL_MAJORS: '1,2', OPENWOP_TEST_SEAMS: 'true' } });
    await installChains(t, 'default', 'vendor.test.url-mode', { 'vendor.test.ship': SHIP, 'vendor.test.unlock': UNLOCK });
    key = await t.key({ scopes: ['tools:read', 'runs:create', 'runs:read', 'approvals:respond'] });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const addr = t.app.getHttpServer().address();
    base = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
  }, 120_000);

  afterAll(async () => {
    await t?.close();
  });

  it('asks a nested answer in URL mode on the host page of the run, again after an accept, and completes once answered there', async () => {
    const c = await client(base, key, { form: {}, url: {} });
    try {
      const first = (await c.callTool({ name: 'ship', arguments: {} }, { allowInputRequired: true } as never)) as Any;
      expect(first.resultType).toBe('input_required');
      const [k] = Object.keys(first.inputRequests);
      const runId = first._meta['io.openwop/runId'];
      expect(first.inputRequests[k]).toEqual({ method: 'elicitation/create', params: { mode: 'url', message: expect.stringContaining('Where to?'), url: `${base}/console/#/runs/${runId}`, elicitationId: k } });
      expect(JSON.stringify(first)).not.toContain('requestedSchema');
      // The person said they would go: nothing is resolved, the same page is asked again.
      const again = (await c.callTool({ name: 'ship', arguments: {}, requestState: first.requestState, inputResponses: { [k]: { action: 'accept' } } } as never, { allowInputRequired: true } as never)) as Any;
      expect(again.resultType).toBe('input_required');
      expect(again.inputRequests[k].params).toMatchObject({ mode: 'url', url: first.inputRequests[k].params.url });
      // Answered on the host (what the page does), the next retry completes.
      const r = await t.http('POST', `/v1/runs/${runId}/interrupts/ask`, { token: key, body: { resumeValue: { answers: { address: { city: 'Lyon' } } } } });
      expect(r.status).toBeLessThan(300);
      const done = (await c.callTool({ name: 'ship', arguments: {}, requestState: again.requestState, inputResponses: { [k]: { action: 'accept' } } } as never, { allowInputRequired: true } as never)) as Any;
      expect(done).toMatchObject({ isError: false, structuredContent: { answers: { address: { city: 'Lyon' } } } });
    } finally {
      await c.close();
    }
  });

  it('never asks a nested or secret answer in form mode: isError for a form-only client', async () => {
    const c = await client(base, key, { form: {} });
    try {
      for (const name of ['ship', 'unlock']) {
        const r = (await c.callTool({ name, arguments: {} }, { allowInputRequired: true } as never)) as Any;
        expect(r.inputRequests).toBeUndefined();
        expect(r.isError).toBe(true);
        expect(r.content[0].text).toMatch(/nested or secret/);
      }
    } finally {
      await c.close();
    }
    const url = await client(base, key, { url: {} });
    try {
      const r = (await url.callTool({ name: 'unlock', arguments: {} }, { allowInputRequired: true } as never)) as Any;
      expect(Object.values(r.inputRequests as Any).map((x: Any) => x.params.mode)).toEqual(['url']);
    } finally {
      await url.close();
    }
  });

  it('serves the clarification fixtures on the v2 mount: flat in form mode, nested and sensitive never', async () => {
    const call = async (name: string, elicitation: Record<string, unknown>) => {
      const res = await fetch(`${base}${V2}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json', authorization: `Bearer ${key}`, 'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': 'tools/call', 'Mcp-Name': name },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: {}, _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': { elicitation } } } }),
      });
      return ((await res.json()) as Any).result as Any;
    };
    const modes = (r: Any) => Object.values((r.inputRequests ?? {}) as Any).map((x: Any) => x.params.mode);
    expect(modes(await call('conformance-clarification', {}))).toEqual(['form']);
    for (const name of ['conformance-clarification-nested', 'conformance-clarification-sensitive']) {
      expect((await call(name, {})).isError).toBe(true);
      expect(modes(await call(name, { url: {} }))).toEqual(['url']);
    }
  });
});
