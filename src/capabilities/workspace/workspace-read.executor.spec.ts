import { checkNodeExecutorContract, type NodeWorkspace } from '@openwop-host/plugin-sdk';
import { WorkspaceReadExecutor } from './workspace-read.executor';

const FILE = { path: 'DIRECTIVES.md', content: 'be brief', contentType: 'text/markdown', version: 2, etag: '"v2"', updatedAt: '2026-01-01T00:00:00.000Z' };

describe('core.workspace.read', () => {
  const workspace: NodeWorkspace = {
    get: async (path) => (path === FILE.path ? FILE : null),
    list: async (prefix) => [FILE].filter((f) => f.path.startsWith(prefix ?? '')).map(({ content: _content, ...meta }) => meta),
  };

  it('outputs what ctx.workspace answers: the file at path (null when absent) and the list under prefix', async () => {
    const r = await checkNodeExecutorContract(new WorkspaceReadExecutor(), { config: { path: 'DIRECTIVES.md', prefix: '' }, workspace });
    expect(r.problems).toEqual([]);
    const { content: _content, ...meta } = FILE;
    expect(r.result?.outputs).toEqual({ file: FILE, files: [meta] });
    expect((await checkNodeExecutorContract(new WorkspaceReadExecutor(), { config: { path: 'MISSING.md' }, workspace })).result?.outputs).toEqual({ file: null });
    expect((await checkNodeExecutorContract(new WorkspaceReadExecutor(), { config: { prefix: 'x/' }, workspace })).result?.outputs).toEqual({ files: [] });
  });

  it('fails capability_not_provided without ctx.workspace, and refuses a config without path and prefix', async () => {
    expect((await checkNodeExecutorContract(new WorkspaceReadExecutor(), { config: { path: 'a.md' }, expectErrorCode: 'capability_not_provided' })).problems).toEqual([]);
    const x = new WorkspaceReadExecutor();
    expect(x.validateConfig({})).toEqual(['core.workspace.read needs config.path or config.prefix']);
    expect(x.validateConfig({ path: 3 })).toEqual(['core.workspace.read config.path must be a string']);
    expect(x.validateConfig({ path: '{{inputs.p}}', prefix: 'notes/' })).toEqual([]);
  });
});
