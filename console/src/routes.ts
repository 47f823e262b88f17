/**
 * The console's addresses are hash routes, so every view can be linked, bookmarked and reloaded:
 * `#/<page>` and `#/<page>/<id>` (a run, goal, proposal or tool; ids are URI-encoded).
 */
export interface Route {
  page: string;
  id?: string;
}

export function parseHash(hash: string): Route {
  const [page = '', id] = hash.replace(/^#\/?/, '').split('/');
  if (!id) return { page };
  try {
    return { page, id: decodeURIComponent(id) };
  } catch {
    return { page };
  }
}

export function href(page: string, id?: string): string {
  return id ? `#/${page}/${encodeURIComponent(id)}` : `#/${page}`;
}

export const link = {
  run: (runId: string) => href('runs', runId),
  goal: (id: string) => href('goals', id),
  proposal: (id: string) => href('proposals', id),
  tool: (toolId: string) => href('tools', toolId),
  approvals: () => href('approvals'),
};

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Whether an id can name a run of this host (its run ids are UUIDs; a goal may record others'). */
export function isRunId(id: string): boolean {
  return UUID.test(id);
}
