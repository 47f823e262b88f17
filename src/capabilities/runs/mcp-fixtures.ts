/** The MCP server the conformance runner configures (tools.mcpServers[].id) for the MCP fixtures. */
export const MCP_CONFORMANCE_SERVER = 'conformance';

/**
 * Conformance fixtures that call the configured `conformance` MCP server: served (and advertised)
 * only while the test seams are on and that server is configured.
 */
export const MCP_CONFORMANCE_FIXTURES: Record<string, Record<string, unknown>> = {
  // mcp-tool-roundtrip: `inputs.text` → tools/call echo {text} on the conformance server.
  'conformance-mcp-tool-roundtrip': {
    nodes: [{ id: 'invoke', typeId: 'core.conformance.mcp-invoke', config: { serverId: MCP_CONFORMANCE_SERVER, tool: 'echo', arguments: { text: '{{inputs.text}}' } } }],
  },
};

/**
 * The `ctx.mcp` fixture (RFC 0204 §A, scenario `v2-mcp-client-results`): one node calling
 * `ctx.mcp.<inputs.method>` with the run's inputs (core-conformance-mcp-client.executor.ts). Served
 * under the same gate as the fixtures above, but not listed in the v1 discovery `fixtures[]`: it is
 * to be advertised only beside the v2 `mcp.client` facet (WorkflowResolver.mcpClientFixtureIds).
 */
export const MCP_CLIENT_FIXTURES: Record<string, Record<string, unknown>> = {
  'conformance-mcp-client': {
    nodes: [{ id: 'mcp-client', typeId: 'core.conformance.mcp-client', config: {} }],
  },
};
