import type { V2FamilyRecord } from './types';

/**
 * The v2 `oauth` record (core/capabilities.md#oauth, RFC 0047; RFC 0199 §C.1 `credentialInterrupt`): the host as an
 * OAuth client of connection providers (`grants`, `providers` from the v1 document's `oauth`, empty while no OAuth
 * client is configured) and, while connections are served, the `credential` interrupt: a `core.credential` step
 * whose starter holds no credential for its provider suspends on it (connectUrl; resolved by the host once a grant
 * is stored) instead of failing. `credentialInterrupt` is v2-only (the v1 schema has no such member).
 */
export const OAUTH_RECORD: V2FamilyRecord = {
  family: 'oauth',
  record: (v1) => {
    const o = v1.oauth as { supported?: boolean; grants?: unknown[]; providers?: unknown[] } | undefined;
    const connections = (v1.connections as { supported?: boolean } | undefined)?.supported === true;
    if (!o?.supported && !connections) return undefined;
    return {
      status: 'experimental',
      since: '2.0',
      until: '2027-06-30',
      witness: 'witnessable-gated',
      grants: o?.supported && Array.isArray(o.grants) ? o.grants : [],
      providers: o?.supported && Array.isArray(o.providers) ? o.providers : [],
      ...(connections ? { credentialInterrupt: true } : {}),
    };
  },
};
