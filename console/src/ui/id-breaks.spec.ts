import { idSegments } from './id-breaks';

describe('console id breaks', () => {
  it('cuts an id after its separators only, and the pieces joined are the id', () => {
    const cases: Array<[string, string[]]> = [
      ['workflow:private.examples.parallel-tools', ['workflow:', 'private.', 'examples.', 'parallel-tools']],
      ['x-host-openwop-echo', ['x-host-openwop-echo']],
      ['mcp:fx.echo', ['mcp:', 'fx.', 'echo']],
      ['a/b_c@d', ['a/', 'b_', 'c@', 'd']],
      // A trailing or doubled separator stays with what it follows.
      ['acme..tool.', ['acme.', '.', 'tool.']],
      ['', ['']],
    ];
    for (const [id, segments] of cases) {
      expect([id, idSegments(id)]).toEqual([id, segments]);
      expect(idSegments(id).join('')).toBe(id);
    }
  });
});
