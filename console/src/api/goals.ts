/** Standing goals (`/v1/goals`) through the generated client. */
import { api, call, paths, Schemas } from './client';
import { Page, pageQuery } from './paging';

export type Goal = Schemas['Goal'];
export type GoalState = Goal['state'];
export type GoalRun = paths['/v1/goals/{id}/runs']['get']['responses'][200]['content']['application/json']['runs'][number];
export const GOAL_STATES: GoalState[] = ['active', 'satisfied', 'escalated', 'abandoned', 'bound-exceeded'];

export async function listGoals(opts: { state?: GoalState; cursor?: string }): Promise<Page<Goal>> {
  const r = await call(api.GET('/v1/goals', { params: { query: { ...pageQuery(opts.cursor), ...(opts.state ? { state: opts.state } : {}) } } }));
  return { items: r.goals, nextCursor: r.nextCursor };
}

export function getGoal(id: string): Promise<Goal> {
  return call(api.GET('/v1/goals/{id}', { params: { path: { id } } }));
}

export function getGoalStatus(id: string) {
  return call(api.GET('/v1/goals/{id}/status', { params: { path: { id } } }));
}

/** The runs judged for a goal, in the order they were recorded. */
export async function listGoalRuns(id: string, cursor?: string): Promise<Page<GoalRun>> {
  const r = await call(api.GET('/v1/goals/{id}/runs', { params: { path: { id }, query: pageQuery(cursor) } }));
  return { items: r.runs, nextCursor: r.nextCursor };
}

export function controlGoal(id: string, action: 'pause' | 'resume' | 'abandon'): Promise<unknown> {
  const opts = { params: { path: { id } } };
  if (action === 'pause') return call(api.POST('/v1/goals/{id}/pause', opts));
  if (action === 'resume') return call(api.POST('/v1/goals/{id}/resume', opts));
  return call(api.POST('/v1/goals/{id}/abandon', opts));
}
