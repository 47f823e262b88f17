/** The characters an id is broken after when it must wrap: namespace and path separators (`workflow:acme.greet`, `a/b`, `x_y`). */
const SEPARATOR = /[.:/_@]/;

/**
 * An id cut after each separator, so it can wrap where its own structure does (`workflow:`, `private.`, `examples.`,
 * `greet`) rather than at any character; the pieces joined are the id. Hyphens need no cut: browsers break after them.
 */
export function idSegments(id: string): string[] {
  const out: string[] = [];
  let start = 0;
  for (let i = 0; i < id.length; i++) {
    if (SEPARATOR.test(id[i]) && i + 1 < id.length) {
      out.push(id.slice(start, i + 1));
      start = i + 1;
    }
  }
  if (start < id.length || !out.length) out.push(id.slice(start));
  return out;
}
