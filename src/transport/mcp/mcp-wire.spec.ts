import { decodeMcpName, isRefusal, MCP_CURRENT, McpRefusal, McpRequest, pageOf, readRequest, RPC, RpcError, statusOf } from './mcp-wire';

const V = 'io.modelcontextprotocol/protocolVersion';
const C = 'io.modelcontextprotocol/clientCapabilities';
const body = (method: string, params: Record<string, unknown> = {}, id: unknown = 1) => ({ jsonrpc: '2.0', id, method, params });
const modern = (method: string, extra: Record<string, string> = {}) => ({ 'mcp-protocol-version': MCP_CURRENT, 'mcp-method': method, ...extra });
const meta = (v = MCP_CURRENT, caps: Record<string, unknown> = {}) => ({ _meta: { [V]: v, [C]: caps } });

function refused(r: McpRequest | McpRefusal): McpRefusal {
  expect(isRefusal(r)).toBe(true);
  return r as McpRefusal;
}
function accepted(r: McpRequest | McpRefusal): McpRequest {
  expect(isRefusal(r)).toBe(false);
  return r as McpRequest;
}

describe('MCP mount wire rules', () => {
  it('serves a header-less request as the legacy revision, and a 2026-07-28 one as modern with its capabilities', () => {
    expect(accepted(readRequest(body('initialize', { protocolVersion: '2025-06-18' }), {}))).toMatchObject({ era: 'legacy', revision: '2025-06-18' });
    expect(accepted(readRequest(body('tools/list', meta(MCP_CURRENT, { elicitation: {} })), modern('tools/list')))).toMatchObject({ era: 'modern', clientCapabilities: { elicitation: {} } });
    expect(accepted(readRequest(body('tools/list'), { 'mcp-protocol-version': '2025-06-18' }))).toMatchObject({ era: 'legacy', clientCapabilities: {} });
  });

  it('checks agreement before selection: a mismatch is -32020 even with an unsupported body revision', () => {
    const r = refused(readRequest(body('tools/list', meta('2025-06-18')), modern('tools/list')));
    expect([r.status, r.body.error.code]).toEqual([400, RPC.HEADER_MISMATCH]);
    expect(refused(readRequest(body('tools/list', meta('2099-01-01')), modern('tools/list'))).body.error.code).toBe(RPC.HEADER_MISMATCH);
    const u = refused(readRequest(body('tools/list', meta('1999-01-01')), { 'mcp-protocol-version': '1999-01-01', 'mcp-method': 'tools/list' }));
    expect([u.status, u.body.error.code, u.body.error.data]).toEqual([400, RPC.UNSUPPORTED_PROTOCOL_VERSION, { supported: ['2026-07-28', '2025-06-18'], requested: '1999-01-01' }]);
  });

  it('requires the revision in _meta, Mcp-Method, and Mcp-Name on named methods under 2026-07-28', () => {
    expect(refused(readRequest(body('tools/list'), modern('tools/list'))).body.error.code).toBe(RPC.HEADER_MISMATCH);
    expect(refused(readRequest(body('tools/list', meta()), { 'mcp-protocol-version': MCP_CURRENT })).body.error.code).toBe(RPC.HEADER_MISMATCH);
    expect(refused(readRequest(body('tools/list', meta()), modern('resources/list'))).body.error.code).toBe(RPC.HEADER_MISMATCH);
    expect(refused(readRequest(body('tools/call', { name: 'echo', ...meta() }), modern('tools/call'))).body.error.code).toBe(RPC.HEADER_MISMATCH);
    expect(refused(readRequest(body('tools/call', { name: 'echo', ...meta() }), modern('tools/call', { 'mcp-name': 'other' }))).body.error.code).toBe(RPC.HEADER_MISMATCH);
    expect(accepted(readRequest(body('tools/call', { name: 'echo', ...meta() }), modern('tools/call', { 'mcp-name': 'echo' }))).method).toBe('tools/call');
    // Base64-sentinel names (non-ASCII), and a broken sentinel.
    const enc = `=?base64?${Buffer.from('héllo').toString('base64')}?=`;
    expect(accepted(readRequest(body('tools/call', { name: 'héllo', ...meta() }), modern('tools/call', { 'mcp-name': enc }))).method).toBe('tools/call');
    expect(refused(readRequest(body('tools/call', { name: 'x', ...meta() }), modern('tools/call', { 'mcp-name': '=?base64?%%%?=' }))).body.error.code).toBe(RPC.HEADER_MISMATCH);
    expect(decodeMcpName('plain')).toBe('plain');
    // A body that claims a revision without the header disagrees with it.
    expect(refused(readRequest(body('tools/list', meta()), {})).body.error.code).toBe(RPC.HEADER_MISMATCH);
    // A repeated header is refused.
    expect(refused(readRequest(body('tools/list', meta()), { 'mcp-protocol-version': [MCP_CURRENT, MCP_CURRENT], 'mcp-method': 'tools/list' })).body.error.code).toBe(RPC.HEADER_MISMATCH);
  });

  it('refuses what is not one JSON-RPC request, and reads a notification', () => {
    for (const bad of [[body('ping')], 'x', null, { jsonrpc: '1.0', id: 1, method: 'ping' }, { jsonrpc: '2.0', id: {}, method: 'ping' }, { jsonrpc: '2.0', id: 1 }, { jsonrpc: '2.0', id: 1, method: 'ping', params: [] }]) {
      const r = refused(readRequest(bad, {}));
      expect([r.status, r.body.error.code]).toEqual([400, RPC.INVALID_REQUEST]);
    }
    expect(accepted(readRequest({ jsonrpc: '2.0', method: 'notifications/initialized' }, {})).id).toBeUndefined();
  });

  it('answers method-not-found 404 at 2026-07-28 and 200 on the legacy revision', () => {
    const e = new RpcError(RPC.METHOD_NOT_FOUND, 'x');
    expect(statusOf({ era: 'modern' }, e)).toBe(404);
    expect(statusOf({ era: 'legacy' }, e)).toBe(200);
    expect(statusOf({ era: 'modern' }, new RpcError(RPC.INVALID_PARAMS, 'x'))).toBe(200);
  });

  it('pages a sorted list with opaque cursors and refuses a forged one', () => {
    const items = Array.from({ length: 5 }, (_, i) => `t${i}`);
    const first = pageOf(items, (x) => x, undefined, 2);
    expect(first.page).toEqual(['t0', 't1']);
    const second = pageOf(items, (x) => x, first.nextCursor, 2);
    expect(second.page).toEqual(['t2', 't3']);
    const third = pageOf(items, (x) => x, second.nextCursor, 2);
    expect(third).toEqual({ page: ['t4'] });
    expect(() => pageOf(items, (x) => x, 'not a cursor!', 2)).toThrow(RpcError);
    expect(() => pageOf(items, (x) => x, Buffer.from('z').toString('base64url'), 2)).toThrow(RpcError);
  });
});
