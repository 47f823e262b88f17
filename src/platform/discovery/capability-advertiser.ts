import { DiscoveryService } from '@nestjs/core';

/**
 * A provider that contributes to `/.well-known/openwop`. `advertise()` returns root-level keys
 * (for example `{ toolCatalog: {...} }`, `{ agents: { goals: {...} } }` or `{ limits: {...} }`);
 * objects are merged deeply. Returning undefined advertises nothing: advertise only what is served.
 */
export interface CapabilityAdvertiser {
  advertise(): Record<string, unknown> | undefined | Promise<Record<string, unknown> | undefined>;
  /**
   * Auth-scoped discovery (RFC 0011): the blocks of this advertiser a caller may only see when
   * holding at least one of the listed scopes, by dotted path (`toolCatalog`, `agents.goals`). An
   * authenticated view leaves out the blocks the caller could not use; the anonymous view is whole.
   */
  readonly scopedBy?: Readonly<Record<string, readonly string[]>>;
}

export const Advertiser = DiscoveryService.createDecorator<void>();
