import { SetMetadata } from '@nestjs/common';

/**
 * An extension point: a metadata key (a global string, so it survives two copies of this package)
 * and a class decorator that marks a provider as a contribution to it. The host finds
 * contributions through Nest's DiscoveryService.
 */
export interface ExtensionPoint<M> {
  readonly id: string;
  readonly key: string;
  (meta: M): ClassDecorator;
}

export function defineExtensionPoint<M>(id: string): ExtensionPoint<M> {
  const key = `openwop:extension:${id}`;
  const decorator = ((meta: M) => SetMetadata(key, meta)) as unknown as ExtensionPoint<M>;
  Object.defineProperty(decorator, 'id', { value: id });
  Object.defineProperty(decorator, 'key', { value: key });
  return decorator;
}

export function extensionMetadata<M>(point: ExtensionPoint<M>, target: object | undefined): M | undefined {
  if (!target) return undefined;
  const ctor = typeof target === 'function' ? target : (target as { constructor?: unknown }).constructor;
  if (!ctor) return undefined;
  return Reflect.getMetadata(point.key, ctor as object) as M | undefined;
}
