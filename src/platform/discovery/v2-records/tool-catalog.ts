import type { V2FamilyRecord } from './types';

/**
 * The v2 `toolCatalog` record (spec v2 tool-catalog.md, declaration.json: experimental,
 * witnessable-gated; facets `sources`, `sessionLifecycle`, `compactView`), present while the v1
 * document advertises the catalog. Its operations (`GET /tools`, `GET /tools/{toolId}`) run the v1
 * handlers, which render the v2 descriptor (RFC 0204 `annotations`) at major 2.
 */
export const TOOL_CATALOG_RECORD: V2FamilyRecord = {
  family: 'toolCatalog',
  record: (v1) => {
    const t = v1.toolCatalog as { supported?: boolean; sources?: unknown[]; sessionLifecycle?: boolean; compactView?: boolean } | undefined;
    if (!t?.supported) return undefined;
    return {
      status: 'experimental',
      since: '2.0',
      until: TOOL_CATALOG_UNTIL,
      witness: 'witnessable-gated',
      sources: t.sources ?? [],
      ...(t.sessionLifecycle ? { sessionLifecycle: true } : {}),
      ...(t.compactView ? { compactView: true } : {}),
    };
  },
};

/** Until when the experimental `toolCatalog` record stands as it is (re-evaluated before then). */
export const TOOL_CATALOG_UNTIL = '2027-06-30';
