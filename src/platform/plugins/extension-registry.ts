import type { DiscoveryService } from '@nestjs/core';

/** One provider contributing to an extension point: its key, the decorator's metadata and the instance. */
export interface ExtensionContribution<M, P> {
  key: string;
  meta: M;
  provider: P;
  /** The provider's name in the Nest container (its class name), for messages. */
  providerName: string;
}

/** How one extension point is collected. */
export interface ExtensionPointSpec<M, P> {
  /** What a contribution is called in messages: "node executor", "tool source". */
  name: string;
  /** The metadata key its decorator writes on the provider class (an SDK extension point's `key`, a Nest decorator's `KEY`). */
  metadataKey: string;
  /** The key that identifies a contribution; two providers with one key are refused at start. */
  key(meta: M, provider: P): string;
  /** Why a contribution is unusable (undefined: it is usable). */
  validate?(meta: M, provider: P): string | undefined;
  /**
   * What an unusable contribution does: `refuse` (the default) stops the start; `skip` leaves only
   * that contribution out and reports it through `onSkip` (a plugin degrades only its own contribution).
   */
  invalid?: 'refuse' | 'skip';
  onSkip?(problem: string, contribution: ExtensionContribution<M, P>): void;
}

/** Thrown at start for a duplicate key or an unusable contribution that is refused. */
export class ExtensionPointError extends Error {}

type Wrappers = ReturnType<DiscoveryService['getProviders']>;

/**
 * The one scan for extension points: every provider whose class carries `spec.metadataKey`, keyed,
 * validated, duplicates refused with both providers named, in key order (so what plugins contribute
 * is listed the same whatever order the modules were mounted in).
 */
export function collectExtensions<M, P>(discovery: Pick<DiscoveryService, 'getProviders'>, spec: ExtensionPointSpec<M, P>): ExtensionContribution<M, P>[] {
  return collectFrom(discovery.getProviders(), spec);
}

export function collectFrom<M, P>(wrappers: Wrappers, spec: ExtensionPointSpec<M, P>): ExtensionContribution<M, P>[] {
  const byKey = new Map<string, ExtensionContribution<M, P>>();
  for (const wrapper of wrappers) {
    const type = wrapper.metatype;
    if (!type || !wrapper.instance) continue;
    const meta = Reflect.getMetadata(spec.metadataKey, type) as M | undefined;
    if (meta === undefined) continue;
    const provider = wrapper.instance as P;
    const providerName = typeof wrapper.name === 'string' && wrapper.name ? wrapper.name : (type as { name?: string }).name ?? '(anonymous)';
    const problem = spec.validate?.(meta, provider);
    if (problem !== undefined) {
      const contribution: ExtensionContribution<M, P> = { key: '', meta, provider, providerName };
      if (spec.invalid === 'skip') {
        spec.onSkip?.(problem, contribution);
        continue;
      }
      throw new ExtensionPointError(`${spec.name} ${providerName}: ${problem}`);
    }
    const key = spec.key(meta, provider);
    const first = byKey.get(key);
    if (first) throw new ExtensionPointError(`two ${spec.name}s claim "${key}": ${first.providerName} and ${providerName}`);
    byKey.set(key, { key, meta, provider, providerName });
  }
  return [...byKey.values()].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}

/** The metadata type of an extension-point decorator: `ExtensionMeta<typeof ToolSource>` is `ToolSourceMeta`. */
export type ExtensionMeta<E> = E extends (meta: infer M) => unknown ? M : never;
