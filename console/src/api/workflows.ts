/** The installed workflows a caller can start (`GET /v1/workflows`), each with the inputs it declares. */
import { api, call, paths } from './client';
import { Page, pageQuery } from './paging';

export type WorkflowSummary = paths['/v1/workflows']['get']['responses'][200]['content']['application/json']['workflows'][number];

export async function listWorkflows(cursor?: string): Promise<Page<WorkflowSummary>> {
  const r = await call(api.GET('/v1/workflows', { params: { query: pageQuery(cursor) } }));
  return { items: r.workflows, nextCursor: r.nextCursor };
}
