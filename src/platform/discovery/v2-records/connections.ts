import type { V2FamilyRecord } from './types';

/**
 * The v2 `connections` record (spec v2 connection-packs.md, declaration.json: experimental,
 * witnessable-gated; facet `packsSupported`, and RFC 0233's `providerRead`: the host-global
 * registry read `GET /connection-providers[/{providerId}]`), present while the v1 document
 * advertises connection packs.
 */
export const CONNECTIONS_RECORD: V2FamilyRecord = {
  family: 'connections',
  record: (v1) => {
    const c = v1.connections as { supported?: boolean; packsSupported?: boolean } | undefined;
    if (!c?.supported) return undefined;
    return {
      status: 'experimental',
      since: '2.0',
      until: CONNECTIONS_UNTIL,
      witness: 'witnessable-gated',
      packsSupported: c.packsSupported === true,
      ...(c.packsSupported ? { providerRead: true } : {}),
    };
  },
};

/** Until when the experimental `connections` record stands as it is (re-evaluated before then). */
export const CONNECTIONS_UNTIL = '2027-06-30';
