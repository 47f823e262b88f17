import { DiscoveryService } from '@nestjs/core';

/**
 * A provider that contributes to `/.well-known/openwop`. `advertise()` returns root-level keys
 * (for example `{ toolCatalog: {...} }`, `{ agents: { goals: {...} } }` or `{ limits: {...} }`);
 * objects are merged deeply. Returning undefined advertises nothing: advertise only what is served.
 */
export interface CapabilityAdvertiser {
  advertise(): Record<string, unknown> | undefined | Promise<Record<string, unknown> | undefined>;
}

export const Advertiser = DiscoveryService.createDecorator<void>();
