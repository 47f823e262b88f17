import { sideBySide, stableJson } from './diff';

describe('console side-by-side diff', () => {
  it('pairs a changed line with its replacement and keeps the unchanged ones aligned', () => {
    const rows = sideBySide('a\nb\nc', 'a\nB\nc');
    expect(rows).toEqual([
      { kind: 'same', left: 'a', right: 'a', leftNo: 1, rightNo: 1 },
      { kind: 'changed', left: 'b', right: 'B', leftNo: 2, rightNo: 2 },
      { kind: 'same', left: 'c', right: 'c', leftNo: 3, rightNo: 3 },
    ]);
  });

  it('shows pure additions and removals with an empty other side', () => {
    expect(sideBySide('a\nc', 'a\nb\nc').filter((r) => r.kind === 'changed')).toEqual([{ kind: 'changed', left: undefined, right: 'b', leftNo: undefined, rightNo: 2 }]);
    expect(sideBySide('a\nb\nc', 'a\nc').filter((r) => r.kind === 'changed')).toEqual([{ kind: 'changed', left: 'b', right: undefined, leftNo: 2, rightNo: undefined }]);
  });

  it('reports no change for equal documents whatever their key order', () => {
    const rows = sideBySide(stableJson({ b: 1, a: { d: [1, 2], c: null } }), stableJson({ a: { c: null, d: [1, 2] }, b: 1 }));
    expect(rows.every((r) => r.kind === 'same')).toBe(true);
  });

  it('keeps the line numbers of both sides in step across uneven runs of changes', () => {
    const rows = sideBySide('x\n1\n2\ny', 'x\n9\ny\nz');
    expect(rows.map((r) => [r.leftNo ?? null, r.rightNo ?? null])).toEqual([
      [1, 1],
      [2, 2],
      [3, null],
      [4, 3],
      [null, 4],
    ]);
  });
});
