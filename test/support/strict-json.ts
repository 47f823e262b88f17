/**
 * JSON.parse keeps the last of two equal keys silently; log pipelines do not agree on which wins.
 * This parser walks the text once (iteratively) and throws on any object holding a key twice,
 * then returns JSON.parse's value.
 */
export function parseJsonStrict(text: string): unknown {
  const value = JSON.parse(text) as unknown; // syntax errors first, with the usual message
  const stack: Array<Set<string> | null> = []; // one entry per open container: key set (object) or null (array)
  let expectKey = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '"') {
      let j = i + 1;
      while (text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      const top = stack[stack.length - 1];
      if (top && expectKey) {
        const key = JSON.parse(text.slice(i, j + 1)) as string;
        if (top.has(key)) throw new Error(`duplicate key "${key}" in ${text.slice(0, 200)}`);
        top.add(key);
        expectKey = false;
      }
      i = j;
    } else if (c === '{') {
      stack.push(new Set());
      expectKey = true;
    } else if (c === '[') {
      stack.push(null);
      expectKey = false;
    } else if (c === '}' || c === ']') {
      stack.pop();
      expectKey = false;
    } else if (c === ',') {
      expectKey = stack[stack.length - 1] instanceof Set;
    }
  }
  return value;
}
