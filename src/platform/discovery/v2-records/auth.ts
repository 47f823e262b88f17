import type { V2FamilyRecord } from './types';

interface V1Auth {
  oidc?: { issuers?: unknown };
  oauth2?: { issuer?: unknown };
}

/**
 * The v2 `auth` family (spec/v2/core/identity.md, facets spec/v2/facets/auth.schema.json): the lanes a
 * caller may authenticate on. Listed only while an identity-provider lane is configured (the v1
 * document's `auth.oidc` / `auth.oauth2`, src/platform/identity/auth-profiles.advertiser.ts): API keys
 * (revoked on the next request), and the OIDC and OAuth2 lanes with their issuers (tokens live until
 * `exp`, and SCIM deprovisioning is rechecked on every request). RFC 9728 metadata
 * (`/.well-known/oauth-protected-resource`) and the 401/403 challenges project these lanes.
 */
export const AUTH_RECORD: V2FamilyRecord = {
  family: 'auth',
  record: (v1, ctx) => {
    const auth = v1.auth as V1Auth | undefined;
    const oidcIssuers = Array.isArray(auth?.oidc?.issuers) ? auth.oidc.issuers.filter((i): i is string => typeof i === 'string') : [];
    const oauth2Issuer = typeof auth?.oauth2?.issuer === 'string' ? auth.oauth2.issuer : undefined;
    if (!oidcIssuers.length && !oauth2Issuer) return undefined;
    return {
      status: 'experimental',
      since: '2.0',
      until: '2027-06-30',
      witness: 'seam-gated',
      lanes: [
        { lane: 'api-key', issuers: [ctx.origin ?? 'openwop-host'], revocation: 'next-request', minimumAssurance: 'bearer' },
        ...(oidcIssuers.length ? [{ lane: 'oidc', issuers: oidcIssuers, revocation: 'exp-and-recheck', minimumAssurance: 'bearer' }] : []),
        ...(oauth2Issuer ? [{ lane: 'oauth2', issuers: [oauth2Issuer], revocation: 'exp-and-recheck', minimumAssurance: 'bearer' }] : []),
      ],
    };
  },
};
