import { TOOL_SOURCE_KINDS, ToolSourceKind } from '@openwop-host/plugin-sdk';
import { ValidationError } from '../../platform/errors/domain-error';
import type { CatalogView } from './tool-catalog.service';

/**
 * The query of the catalog's list routes, read by hand rather than through a DTO (the list is the
 * host's hottest read and `view` is deliberately lenient); one reading for every transport.
 */

/** Any `view` other than `compact` is the standard view (RFC 0112), so it is not validated as an enum. */
export function parseCatalogView(view: unknown): CatalogView {
  if (view === undefined) return 'standard';
  if (typeof view !== 'string') throw new ValidationError('view must be given once.', { field: 'view' });
  return view === 'compact' ? 'compact' : 'standard';
}

/** `source`, when given, one of the tool source kinds. */
export function parseCatalogSource(source: unknown): ToolSourceKind | undefined {
  if (source === undefined) return undefined;
  if (typeof source !== 'string' || !TOOL_SOURCE_KINDS.includes(source as ToolSourceKind)) {
    throw new ValidationError(`source must be one of ${TOOL_SOURCE_KINDS.join(', ')}.`, { field: 'source', allowed: TOOL_SOURCE_KINDS });
  }
  return source as ToolSourceKind;
}
