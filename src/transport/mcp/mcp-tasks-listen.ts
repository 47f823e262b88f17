import { Injectable, OnModuleDestroy } from '@nestjs/common';
import type { Principal } from '../../platform/identity/principal';
import { McpTasks } from './mcp-tasks';
import { McpRequest, RPC, RpcError } from './mcp-wire';

/** The `_meta` key naming the listen request a notification belongs to (MCP 2026-07-28 subscriptions). */
export const META_SUBSCRIPTION_ID = 'io.modelcontextprotocol/subscriptionId';
/** Most task ids one listen may name. */
const MAX_TASK_IDS = 100;
/** How often a listened task's run is read again for a change of state. */
const WATCH_INTERVAL_MS = 500;
const TERMINAL_TASK = new Set(['completed', 'failed', 'cancelled']);

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** Resolves after `ms`, or at once when `signal` aborts. */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done);
  });
}

/** What a notification says of a task, without its timestamps: a new one is sent only when this changes. */
function stateKey(task: Record<string, unknown>): string {
  return JSON.stringify([task.status, task.inputRequests ?? null, task.result ?? null]);
}

/**
 * `subscriptions/listen` with `notifications.taskIds` (ext-tasks §Task Status Notifications) on the
 * v2 mount: the acknowledgement names the ids this caller may read (any other is left out exactly as
 * a nonexistent one, RFC 0198 §C.6), then `notifications/tasks` carries each task's `DetailedTask`
 * (what `tasks/get` answers) at once and whenever its state changes, until the client closes the
 * stream. Each state is read from the run, so the stream holds nothing a later request reads; at
 * shutdown the listen ends with its (empty) result. No other notification type is offered.
 */
@Injectable()
export class McpTaskSubscriptions implements OnModuleDestroy {
  private readonly listening = new Set<AbortController>();

  constructor(private readonly tasks: McpTasks) {}

  onModuleDestroy(): void {
    for (const c of this.listening) c.abort();
  }

  async listen(principal: Principal, req: McpRequest, notify: ((message: Record<string, unknown>) => void) | undefined, signal?: AbortSignal): Promise<Record<string, unknown>> {
    if (!notify) throw new RpcError(RPC.INVALID_REQUEST, 'subscriptions/listen is answered on an event stream: send Accept: text/event-stream.', undefined, 406);
    const filter = req.params.notifications;
    if (!isObject(filter)) throw new RpcError(RPC.INVALID_PARAMS, 'params.notifications must be an object naming the notifications to listen to.');
    const asked = filter.taskIds;
    const ids: string[] = [];
    if (asked !== undefined) {
      if (!Array.isArray(asked) || asked.length > MAX_TASK_IDS || asked.some((t) => typeof t !== 'string')) throw new RpcError(RPC.INVALID_PARAMS, `notifications.taskIds must be a list of at most ${MAX_TASK_IDS} task ids.`);
      this.tasks.requireDeclared(req);
      this.tasks.requireReadScopes(principal, req.method);
      for (const id of new Set(asked as string[])) if (await this.readable(principal, id)) ids.push(id);
    }
    const subscriptionId = req.id ?? null;
    const meta = { [META_SUBSCRIPTION_ID]: subscriptionId };
    notify({ jsonrpc: '2.0', method: 'notifications/subscriptions/acknowledged', params: { notifications: asked !== undefined ? { taskIds: ids } : {}, _meta: meta } });
    const stop = new AbortController();
    const leave = () => stop.abort();
    signal?.addEventListener('abort', leave);
    if (signal?.aborted) stop.abort();
    this.listening.add(stop);
    try {
      const sent = new Map<string, string>();
      const ended = new Set<string>();
      while (!stop.signal.aborted) {
        for (const id of ids) {
          if (ended.has(id)) continue;
          const task = await this.current(principal, id);
          // Gone (purged) or terminal: nothing more will change.
          if (!task || TERMINAL_TASK.has(task.status as string)) ended.add(id);
          if (!task) continue;
          const key = stateKey(task);
          if (sent.get(id) === key) continue;
          sent.set(id, key);
          notify({ jsonrpc: '2.0', method: 'notifications/tasks', params: { ...task, _meta: { ...(isObject(task._meta) ? task._meta : {}), ...meta } } });
        }
        await pause(WATCH_INTERVAL_MS, stop.signal);
      }
    } finally {
      this.listening.delete(stop);
      signal?.removeEventListener('abort', leave);
    }
    return { _meta: meta };
  }

  private async readable(principal: Principal, taskId: string): Promise<boolean> {
    try {
      await this.tasks.read(principal, taskId);
      return true;
    } catch (e) {
      if (e instanceof RpcError && e.code === RPC.INVALID_PARAMS) return false;
      throw e;
    }
  }

  /** The task as `tasks/get` would answer now, or undefined once it cannot be read (purged). */
  private async current(principal: Principal, taskId: string): Promise<Record<string, unknown> | undefined> {
    try {
      return this.tasks.taskOf(principal, await this.tasks.read(principal, taskId));
    } catch (e) {
      if (e instanceof RpcError && e.code === RPC.INVALID_PARAMS) return undefined;
      throw e;
    }
  }
}
