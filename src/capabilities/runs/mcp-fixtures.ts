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
