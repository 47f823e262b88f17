import { Client, ProtocolError, SdkError, SdkErrorCode } from '@modelcontextprotocol/client';
import { mcpEndpointOf, mcpErrorAttributes, mcpSpanAttributes, MCP_SEMCONV_REF } from './mcp-semconv';

const base = { id: 's', classification: {}, downgrade: 'allow' as const };

describe('MCP semantic-convention projection', () => {
  it('records a JSON-RPC error by its code, and other failures by their kind', () => {
    expect(mcpErrorAttributes(new ProtocolError(-32602, 'Unknown tool'))).toEqual({ 'error.type': '-32602', 'rpc.response.status_code': '-32602' });
    expect(mcpErrorAttributes(new SdkError(SdkErrorCode.RequestTimeout, 'Request timed out'))).toEqual({ 'error.type': 'REQUEST_TIMEOUT' });
    expect(mcpErrorAttributes(new TypeError('fetch failed'))).toEqual({ 'error.type': 'TypeError' });
  });

  it('names the network of each transport: tcp with the server address for http, pipe for stdio', () => {
    expect(mcpEndpointOf({ ...base, transport: 'http', url: 'https://mcp.example.com/mcp' })).toEqual({ transport: 'tcp', address: 'mcp.example.com', port: 443 });
    expect(mcpEndpointOf({ ...base, transport: 'http', url: 'http://[::1]:8080/mcp' })).toEqual({ transport: 'tcp', address: '::1', port: 8080 });
    expect(mcpEndpointOf({ ...base, transport: 'stdio', command: 'node', args: [] })).toEqual({ transport: 'pipe' });
  });

  it('starts every span stamped, with the tool only on tools/call and no session or content attribute', () => {
    const client = new Client({ name: 't', version: '1' });
    const call = mcpSpanAttributes({ client, revision: '2026-07-28', endpoint: { transport: 'pipe' } }, 'tools/call', 'add');
    expect(call).toEqual({
      'mcp.method.name': 'tools/call',
      'mcp.protocol.version': '2026-07-28',
      'gen_ai.tool.name': 'add',
      'gen_ai.operation.name': 'execute_tool',
      'network.transport': 'pipe',
      'openwop.otel.mcp_mapping_version': '0',
      'openwop.otel.mcp_semconv_ref': MCP_SEMCONV_REF,
    });
    const list = mcpSpanAttributes({ client, revision: '2025-06-18', endpoint: { transport: 'tcp', address: 'h', port: 1 } }, 'tools/list', undefined);
    expect(Object.keys(list).filter((k) => k.startsWith('gen_ai.') || k === 'mcp.session.id')).toEqual([]);
    expect(list).toEqual(expect.objectContaining({ 'server.address': 'h', 'server.port': 1, 'network.protocol.name': 'http', 'openwop.otel.mcp_mapping_version': '0' }));
  });
});
