import type { ToolDescriptor } from '@openwop-host/plugin-sdk';

/**
 * The tool descriptor's v2 representation (spec v2 tool-catalog.md §The descriptor, RFC 0204 §D.12):
 * the v1 descriptor plus a closed `annotations` object, the projection onto MCP `ToolAnnotations`.
 * Each of the four hints is a fixed function of the host-assigned `safetyTier`, `replayPolicy` and
 * `egress`; nothing a tool source (a plugin, an MCP server) says about hints is read, MCP's defaults
 * are never relied on (all four are always present), and `annotations.title` is never emitted
 * (`title` is the display name). v1 descriptors never carry it: the v1 schema is closed.
 */
export interface ToolAnnotations {
  readOnlyHint: boolean;
  destructiveHint: boolean;
  idempotentHint: boolean;
  openWorldHint: boolean;
}

export type V2ToolDescriptor = ToolDescriptor & { annotations: ToolAnnotations };

/** RFC 0204 §D.12's table over the host-assigned fields only. */
export function toolAnnotations(d: Pick<ToolDescriptor, 'safetyTier' | 'replayPolicy' | 'egress'>): ToolAnnotations {
  return {
    readOnlyHint: d.safetyTier === 'pure' || d.safetyTier === 'read',
    destructiveHint: d.safetyTier === 'write' || d.safetyTier === 'exec',
    idempotentHint: d.replayPolicy === 'deterministic' || d.replayPolicy === 'idempotent',
    // Absent egress is not a promise of none: the tool may reach the open world.
    openWorldHint: d.egress !== 'none',
  };
}

/** A descriptor as major 2 serves it: the v1 fields unchanged, then `annotations`. */
export function toV2Descriptor(d: ToolDescriptor): V2ToolDescriptor {
  return { ...d, annotations: toolAnnotations(d) };
}
