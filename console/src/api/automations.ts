/**
 * Installed automations (`GET /v1/automations`): schedule, next fire, last run. An automation is
 * changed the way it was installed, by applying an `automation` proposal of the same name: enabling or
 * disabling one proposes its artifact again with `enabled` flipped and applies it (which may wait on an
 * approval gate, as any apply).
 */
import { api, call, paths } from './client';
import { Page, pageQuery } from './paging';

export type Automation = paths['/v1/automations']['get']['responses'][200]['content']['application/json']['automations'][number];

export async function listAutomations(cursor?: string): Promise<Page<Automation>> {
  const r = await call(api.GET('/v1/automations', { params: { query: pageQuery(cursor) } }));
  return { items: r.automations, nextCursor: r.nextCursor };
}

/** Proposes the automation again with `enabled` set and applies it; answers the proposal's state after the apply. */
export async function setAutomationEnabled(a: Automation, enabled: boolean): Promise<string> {
  const artifact = { name: a.name, enabled, schedule: a.schedule, action: a.action };
  const body = { kind: 'automation', provenance: { sourceRunIds: ['console'] }, artifact } as unknown as paths['/v1/proposals']['post']['requestBody'] extends { content: { 'application/json': infer B } } ? B : never;
  const created = (await call(api.POST('/v1/proposals', { body }))) as { id: string };
  const applied = (await call(api.POST('/v1/proposals/{id}/apply', { params: { path: { id: created.id } }, body: {} as never }))) as { state?: string; status?: string };
  return applied.state ?? applied.status ?? 'applied';
}
