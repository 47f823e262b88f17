import type { ToolDescriptor, ToolSourceKind } from '@openwop-host/plugin-sdk';
import { SchemaRegistry } from '../../platform/schemas/schema-registry';

/** Ids travel as one URL path segment: no whitespace, no `/`, bounded length. */
const TOOL_ID_PATTERN = /^[^\s/\\?#%]{1,512}$/;
const HOST_EXTENSION_ID = /^x-host-[a-z0-9]+-/;

export interface DescriptorProblem {
  path: string;
  message: string;
}

/**
 * Why a descriptor from `source` must not be served (empty when it may be): the v1
 * tool-descriptor schema (closed, `exec` ⇒ `host-extension`) plus the host's own rules.
 */
export function descriptorProblems(d: unknown, expectedSource: ToolSourceKind, schemas = SchemaRegistry.shared()): DescriptorProblem[] {
  const problems: DescriptorProblem[] = schemas.validate('tool-descriptor', d).map((v) => ({ path: v.path, message: v.message }));
  if (!d || typeof d !== 'object' || Array.isArray(d)) return problems.length ? problems : [{ path: '', message: 'must be an object' }];
  const desc = d as Partial<ToolDescriptor>;
  if (desc.source !== expectedSource) {
    problems.push({ path: '/source', message: `must be "${expectedSource}" (the kind of the source that listed it)` });
  }
  if (typeof desc.toolId === 'string') {
    if (!TOOL_ID_PATTERN.test(desc.toolId)) problems.push({ path: '/toolId', message: 'must be 1-512 characters without whitespace, "/", "\\", "?", "#" or "%"' });
    if (desc.source === 'host-extension' && !HOST_EXTENSION_ID.test(desc.toolId)) {
      problems.push({ path: '/toolId', message: 'a host-extension tool id must start with x-host-<vendor>-' });
    }
  }
  return problems;
}

/** Whether a principal holding `scopes` may see (and so invoke) the tool: every `auth.scopes` entry held. */
export function visibleTo(d: ToolDescriptor, scopes: ReadonlySet<string>): boolean {
  const required = d.auth?.scopes;
  if (!required || required.length === 0) return true;
  for (const s of required) if (!scopes.has(s)) return false;
  return true;
}

/** Code-unit order (not locale order), as the protocol asks. */
export function compareToolIds(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
