import type { NodeExecutionContext, NodeExecutorProvider, NodeHttp } from '@openwop-host/plugin-sdk';
import { auditedHttp } from './node-http-audit';

/** What hands a node execution its `ctx.http` (NodeHttpBinder, node-http.ts). */
export interface NodeHttpSource {
  forNode(ctx: Pick<NodeExecutionContext, 'principal'>): NodeHttp;
}

/**
 * `provider` whose executions get `ctx.http` (when the engine did not set one) from the binder the registry holds,
 * every call of it audited in the run's log (node-http-audit.ts).
 */
export function withHttp(provider: NodeExecutorProvider, binder: () => NodeHttpSource | undefined): NodeExecutorProvider {
  return new Proxy(provider, {
    get(target, prop, receiver) {
      if (prop === 'execute') {
        return (ctx: NodeExecutionContext) => {
          const b = binder();
          return target.execute(ctx.http || !b ? ctx : { ...ctx, http: auditedHttp(b.forNode(ctx), ctx.principal.principal, (type, payload, opts) => ctx.emit(type, payload, opts)) });
        };
      }
      const v = Reflect.get(target, prop, receiver) as unknown;
      // Methods run on the executor itself; its class (decorator metadata) is answered as it is.
      return typeof v === 'function' && prop !== 'constructor' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}
