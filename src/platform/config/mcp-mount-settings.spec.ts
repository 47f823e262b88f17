import { loadMcpMountConfig, McpMountSettingError } from './mcp-mount-settings';

describe('MCP mount settings', () => {
  it('is on by default, at its path, with bounded timeouts', () => {
    expect(loadMcpMountConfig({})).toEqual({ enabled: true, path: '/v1/host/openwop/mcp', callTimeoutMs: 60_000, taskHoldMs: 1000, requestStateTtlSeconds: 900 });
    expect(loadMcpMountConfig({ OPENWOP_MCP_TASK_HOLD_MS: '0' }).taskHoldMs).toBe(0);
    expect(loadMcpMountConfig({ OPENWOP_MCP_SERVER: 'false' }).enabled).toBe(false);
  });

  it('names the mount absolutely under OPENWOP_PUBLIC_URL (a path prefix kept, a trailing slash dropped)', () => {
    expect(loadMcpMountConfig({ OPENWOP_PUBLIC_URL: 'https://wop.example.com/' }).url).toBe('https://wop.example.com/v1/host/openwop/mcp');
    expect(loadMcpMountConfig({ OPENWOP_PUBLIC_URL: 'https://example.com/openwop' }).url).toBe('https://example.com/openwop/v1/host/openwop/mcp');
  });

  it.each([
    [{ OPENWOP_MCP_SERVER: 'maybe' }, /OPENWOP_MCP_SERVER must be true or false/],
    [{ OPENWOP_PUBLIC_URL: 'not a url' }, /OPENWOP_PUBLIC_URL must be an absolute http\(s\) URL/],
    [{ OPENWOP_PUBLIC_URL: 'ftp://example.com' }, /OPENWOP_PUBLIC_URL must be an absolute http\(s\) URL/],
    [{ OPENWOP_PUBLIC_URL: 'https://u:p@example.com' }, /without credentials, query or fragment/],
    [{ OPENWOP_PUBLIC_URL: 'https://example.com/?x=1' }, /without credentials, query or fragment/],
    [{ OPENWOP_MCP_CALL_TIMEOUT_MS: '10' }, /OPENWOP_MCP_CALL_TIMEOUT_MS must be a whole number from 100/],
    [{ OPENWOP_MCP_TASK_HOLD_MS: '60001' }, /OPENWOP_MCP_TASK_HOLD_MS must be a whole number from 0 to 60000/],
    [{ OPENWOP_MCP_TASK_HOLD_MS: '-1' }, /OPENWOP_MCP_TASK_HOLD_MS must be a whole number/],
    [{ OPENWOP_MCP_REQUEST_STATE_TTL_SECONDS: 'soon' }, /OPENWOP_MCP_REQUEST_STATE_TTL_SECONDS must be a whole number/],
  ])('refuses %j', (env, message) => {
    expect(() => loadMcpMountConfig(env)).toThrow(McpMountSettingError);
    expect(() => loadMcpMountConfig(env)).toThrow(message);
  });
});
