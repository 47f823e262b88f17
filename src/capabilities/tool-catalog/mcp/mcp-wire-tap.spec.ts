import type { Transport } from '@modelcontextprotocol/client';
import { McpWireTap } from './mcp-wire-tap';

function fakeTransport(): Transport & { delivered: unknown[] } {
  const t = {
    delivered: [] as unknown[],
    start: async () => undefined,
    close: async () => undefined,
    send: async () => undefined,
  } as unknown as Transport & { delivered: unknown[] };
  return t;
}

const post = (body: unknown) => ({ method: 'POST', body: JSON.stringify(body) });

describe('McpWireTap', () => {
  it("keeps a JSON answer exactly as the server sent it (unknown fields, resultType, nested _meta), by the request's id", async () => {
    const tap = new McpWireTap();
    const t = tap.watch(fakeTransport(), { deliveries: false });
    const result = { resultType: 'complete', content: [{ type: 'text', text: 'ok' }], _meta: { 'io.modelcontextprotocol/serverInfo': { name: 's', version: '1', extra: true }, 'x/nonce': 'n1' }, vendorField: [1] };
    await t.send({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'x' } });
    const fetch = tap.fetch(async () => new Response(JSON.stringify({ jsonrpc: '2.0', id: 7, result }), { headers: { 'content-type': 'application/json' } }));
    const res = await fetch('http://h/mcp', post({}));
    expect(await res.json()).toEqual({ jsonrpc: '2.0', id: 7, result }); // the client still reads the body
    expect(await tap.last('tools/call')).toEqual({ result });
    expect(await tap.last('tools/list')).toBeUndefined();
  });

  it('reads SSE bodies and JSON-RPC errors, and answers the LAST request of a method', async () => {
    const tap = new McpWireTap();
    const t = tap.watch(fakeTransport(), { deliveries: false });
    await t.send({ jsonrpc: '2.0', id: 'a', method: 'tools/list', params: {} });
    await t.send({ jsonrpc: '2.0', id: 'b', method: 'tools/list', params: { cursor: 'c' } });
    const sse = ['event: message', `data: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/progress', params: {} })}`, '', `data: ${JSON.stringify({ jsonrpc: '2.0', id: 'a', result: { tools: [] } })}`, '', `data: ${JSON.stringify({ jsonrpc: '2.0', id: 'b', error: { code: -32602, message: 'bad cursor', data: { cursor: 'c' } } })}`, '', ''].join('\n');
    const fetch = tap.fetch(async () => new Response(sse, { headers: { 'content-type': 'text/event-stream' } }));
    await (await fetch('http://h/mcp', post({}))).text();
    expect(await tap.last('tools/list')).toEqual({ error: { code: -32602, message: 'bad cursor', data: { cursor: 'c' } } });
  });

  it('ignores GET streams; over stdio keeps a copy of each delivered message', async () => {
    const tap = new McpWireTap();
    let calls = 0;
    const fetch = tap.fetch(async () => {
      calls++;
      return new Response('data: {"jsonrpc":"2.0","id":1,"result":{}}\n\n', { headers: { 'content-type': 'text/event-stream' } });
    });
    await fetch('http://h/mcp', { method: 'GET' });
    expect(calls).toBe(1);
    const t = tap.watch(fakeTransport(), { deliveries: true });
    const seen: unknown[] = [];
    t.onmessage = (m) => {
      seen.push(m);
      delete (m as { result?: { resultType?: string } }).result?.resultType; // what a client may do to what it is handed
    };
    await t.send({ jsonrpc: '2.0', id: 1, method: 'resources/read', params: { uri: 'x' } });
    t.onmessage?.({ jsonrpc: '2.0', id: 1, result: { resultType: 'complete', contents: [] } } as never);
    expect(seen).toHaveLength(1);
    expect(await tap.last('resources/read')).toEqual({ result: { resultType: 'complete', contents: [] } });
  });
});
