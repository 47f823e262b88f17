import { mayReadWorkspace } from './workspace-snapshot';

describe('which runs record a workspace snapshot point', () => {
  it('a run of built-ins that never read the workspace records none; core.workspace.read, a plugin node type or an inverse action of one does', () => {
    expect(mayReadWorkspace({ nodes: [{ id: 'a', typeId: 'core.noop' }, { id: 'b', typeId: 'core.tool' }] })).toBe(false);
    expect(mayReadWorkspace({ nodes: [{ id: 'a', typeId: 'core.noop' }, { id: 'r', typeId: 'core.workspace.read' }] })).toBe(true);
    expect(mayReadWorkspace({ nodes: [{ id: 'p', typeId: 'acme.reader' }] })).toBe(true);
    expect(mayReadWorkspace({ nodes: [{ id: 'a', typeId: 'core.noop', compensation: { nodeTypeId: 'acme.undo' } }] })).toBe(true);
  });

  it('a definition it cannot read counts as reading', () => {
    expect(mayReadWorkspace({ nodes: 3 })).toBe(true);
    expect(mayReadWorkspace(undefined)).toBe(true);
    expect(mayReadWorkspace({ nodes: [null] })).toBe(true);
  });
});
