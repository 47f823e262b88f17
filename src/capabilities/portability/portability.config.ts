import type { HostConfig } from '../../platform/config/host-config';

/** The `portability` section of OPENWOP_CONFIG (schema: schemas/host-config.schema.json). */
export interface PortabilityConfig {
  /** `source.origin` of exported bundles; default `openwop-host:<tenant>`. */
  origin?: string;
  /** Most items one import accepts (over it: 413 payload_too_large). */
  maxItems: number;
}

export const DEFAULT_MAX_ITEMS = 10_000;

export function portabilityConfig(config: HostConfig): PortabilityConfig {
  const section = (config.file.portability ?? {}) as { origin?: string; maxItems?: number };
  return { origin: section.origin, maxItems: section.maxItems ?? DEFAULT_MAX_ITEMS };
}
