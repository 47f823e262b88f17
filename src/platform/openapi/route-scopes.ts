/**
 * "Who can reach what", one line per operation: `METHOD path  scopes` (public, or seam + scopes).
 * Committed as schemas/route-scopes.txt so every change to it shows in review.
 */
export function routeScopesTable(doc: Record<string, unknown>): string {
  const lines: string[] = [];
  for (const [p, ops] of Object.entries((doc.paths as Record<string, Record<string, Record<string, unknown>>>) ?? {})) {
    for (const [method, op] of Object.entries(ops)) {
      const scopes = (op['x-required-scopes'] as string[] | undefined) ?? [];
      const secured = Array.isArray(op.security) && op.security.length > 0;
      // Some routes check a scope only after validating the request (portability): show it too.
      const deferred = (op['x-deferred-scopes'] as string[] | undefined) ?? [];
      const anyOf = (op['x-required-scopes-any-of'] as string[] | undefined) ?? [];
      const all = [...scopes, ...(anyOf.length ? [`(${anyOf.join(' | ')})`] : [])];
      const required = all.length ? all.join(' + ') : 'authenticated';
      const label = !secured ? 'public' : `${op['x-test-seam'] ? 'seam ' : ''}${required}${deferred.length ? `, then ${deferred.join(' | ')}` : ''}`;
      lines.push(`${method.toUpperCase().padEnd(6)} ${p.padEnd(60)} ${label}`);
    }
  }
  return `${lines.sort().join('\n')}\n`;
}
