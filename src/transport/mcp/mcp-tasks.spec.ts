import type { Principal } from '../../platform/identity/principal';
import type { McpCalls } from './mcp-calls';
import { McpTasks, runIdOf, taskIdOf } from './mcp-tasks';
import type { RunState } from './mcp-run-projection';

const RUN = '6f1c0d3e-2b4a-4c5d-8e9f-0a1b2c3d4e5f';
const who = (tenant: string): Principal => ({ tenant, principal: 'agent', scopes: new Set(['runs:read']), kind: 'api-key' }) as unknown as Principal;
const tasks = new McpTasks({} as never, {} as McpCalls);

describe('MCP tasks: ids and the status projection (RFC 0198 §C, §D)', () => {
  it('a taskId is the tenant-bound run id in one segment, read back only for its own tenant', () => {
    expect(taskIdOf(who('acme'), RUN)).toBe(`acme~2F${RUN}`);
    expect(taskIdOf(who('acme corp'), RUN)).toBe(`acme~20corp~2F${RUN}`);
    expect(runIdOf(who('acme'), `acme~2F${RUN}`)).toBe(RUN);
    expect(runIdOf(who('acme corp'), taskIdOf(who('acme corp'), RUN))).toBe(RUN);
    expect(runIdOf(who('acme'), `acme/${RUN.toUpperCase()}`)).toBe(RUN);
    // Another tenant's, a bare id, a malformed one: all the same nothing.
    for (const id of [`other~2F${RUN}`, RUN, `acme~2Fnot-a-uuid`, 'acme~2', '~ZZ', 42, undefined, `acme%2F${RUN}`]) expect(runIdOf(who('acme'), id)).toBeUndefined();
  });

  const project = (state: Partial<RunState> & Record<string, unknown>) => tasks.taskOf(who('acme'), { runId: RUN, startedAt: '2026-12-05T10:00:00.000Z', ...state } as RunState);

  it('projects every run status onto a task status', () => {
    for (const status of ['pending', 'running', 'paused', 'cancelling', 'waiting-external']) expect(project({ status }).status).toBe('working');
    expect(project({ status: 'completed', outputs: { done: { ok: true } }, completedAt: '2026-12-05T10:01:00.000Z' })).toMatchObject({
      status: 'completed',
      result: { isError: false, structuredContent: { ok: true } },
      lastUpdatedAt: '2026-12-05T10:01:00.000Z',
      ttlMs: null,
    });
    // A failed run is a tool outcome, never the task status failed.
    expect(project({ status: 'failed', error: { code: 'boom', message: 'it broke' } })).toMatchObject({ status: 'completed', result: { isError: true } });
    expect(project({ status: 'cancelled' }).status).toBe('cancelled');
  });

  it('an open approval is input_required, keyed by its tenant-bound interruptId; one MCP cannot ask stays working', () => {
    const interrupt = { interruptId: 'i-1', kind: 'approval', nodeId: 'gate', title: 'Ship it?', requestedAt: '2026-12-05T10:00:05.000Z' };
    const t = project({ status: 'waiting-approval', interrupt });
    expect(t).toMatchObject({ status: 'input_required', lastUpdatedAt: '2026-12-05T10:00:05.000Z' });
    expect(Object.keys(t.inputRequests as object)).toEqual(['acme/i-1']);
    expect((t.inputRequests as Record<string, unknown>)['acme/i-1']).toMatchObject({ method: 'elicitation/create', params: { mode: 'form', message: 'Ship it?' } });
    const external = project({ status: 'waiting-input', interrupt: { ...interrupt, kind: 'external-event' } });
    expect(external.status).toBe('working');
    expect(external.inputRequests).toBeUndefined();
  });
});
