/**
 * The sample-workflow seam the MCP scenarios register tools with: malformed bodies are refused with
 * the canonical 400, a workflow installs for the caller's tenant only (another tenant's mount does
 * not list it), and registering it again updates it.
 */
import { createTestApp, TestApp } from '../support/test-app';

const V = 'io.modelcontextprotocol/protocolVersion';
const C = 'io.modelcontextprotocol/clientCapabilities';
const TOOL = { nodeId: 'expose', typeId: 'core.openwop.mcp.expose-tool', config: { name: 'seam_tool' } };

describe('sample-workflow seam (e2e)', () => {
  let t: TestApp;
  let mine: string;
  let theirs: string;

  beforeAll(async () => {
    t = await createTestApp({ env: { OPENWOP_TEST_SEAMS: 'true' } });
    mine = await t.key({ scopes: ['runs:create', 'tools:read'] });
    theirs = await t.key({ tenant: 'other', scopes: ['runs:create', 'tools:read'] });
  }, 60_000);

  afterAll(async () => {
    await t?.close();
  });

  const list = async (token: string): Promise<string[]> => {
    const r = await t.http('POST', '/v1/host/openwop/mcp', { token, headers: { 'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': 'tools/list' }, body: { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: { [V]: '2026-07-28', [C]: {} } } } });
    return r.body.result.tools.map((x: { name: string }) => x.name);
  };

  it.each([
    ['no body fields', {}],
    ['a workflowId that is no chain id', { workflowId: 'Bad Id!', nodes: [TOOL] }],
    ['no nodes', { workflowId: 'sample.empty', nodes: [] }],
    ['a node without typeId', { workflowId: 'sample.x', nodes: [{ nodeId: 'a' }] }],
    ['an edge without target', { workflowId: 'sample.x', nodes: [TOOL], edges: [{ sourceNodeId: 'expose' }] }],
  ])('refuses %s with 400 validation_error', async (_what, body) => {
    const r = await t.http('POST', '/v1/host/sample/workflows', { token: mine, body });
    expect(r.status).toBe(400);
    expect(r.body.error).toBe('validation_error');
  });

  it('refuses a chain the install checks refuse (unknown node type) with 422, nothing installed', async () => {
    const r = await t.http('POST', '/v1/host/sample/workflows', { token: mine, body: { workflowId: 'sample.broken', nodes: [{ nodeId: 'a', typeId: 'vendor.none.such' }] } });
    expect(r.status).toBe(422);
    expect(r.body.error).toBe('pack_invalid');
  });

  it('installs for the caller\'s tenant only, and updates on a second registration', async () => {
    const first = await t.http('POST', '/v1/host/sample/workflows', { token: mine, body: { workflowId: 'sample.tool', nodes: [TOOL] } });
    expect([first.status, first.body.outcome]).toEqual([201, 'created']);
    expect(await list(mine)).toContain('seam_tool');
    expect(await list(theirs)).not.toContain('seam_tool');
    const again = await t.http('POST', '/v1/host/sample/workflows', { token: mine, body: { workflowId: 'sample.tool', nodes: [{ ...TOOL, config: { name: 'seam_tool', description: 'changed' } }] } });
    expect([again.status, again.body.outcome]).toEqual([200, 'updated']);
  });
});
