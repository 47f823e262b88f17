import type { V2FamilyRecord } from './types';

interface V1Auth {
  oidc?: { issuers?: unknown };
  oauth2?: { issuer?: unknown };
  subjectLinkKey?: unknown;
}

/** The parts of the identity settings the SAML and SCIM lanes are read from (src/platform/config/identity-settings.ts). */
interface IdentityLaneSettings {
  saml?: { idps: { tenant: string; entityId: string; scim: boolean }[] };
  /** SCIM token → tenant. */
  scimTokens?: Map<string, string>;
}

/**
 * The trust roots of the SAML and SCIM lanes (spec/v2/core/identity.md §2.2). SAML: the entityID of
 * every configured provider. SCIM: a SCIM connection is a tenant's token, bound at configuration to the
 * one provider marked `scim` for that tenant (the IdP whose subjects its users link to); the lane is
 * listed, with those entityIDs, only while every connection is bound, since the rule it advertises
 * (`bound-connection`) is that one. A tenant with a SCIM token and no feeding SAML provider (SCIM beside
 * the OIDC lane) provisions unbound, so no scim lane is claimed then.
 */
export function samlScimIssuers(identity: IdentityLaneSettings | undefined): { saml: string[]; scim: string[] } {
  const idps = identity?.saml?.idps ?? [];
  const tenants = [...new Set(identity?.scimTokens?.values() ?? [])];
  const feeders = tenants.map((t) => idps.find((p) => p.tenant === t && p.scim)?.entityId);
  const bound = feeders.every((f): f is string => f !== undefined);
  return { saml: [...new Set(idps.map((p) => p.entityId))], scim: bound ? [...new Set(feeders as string[])] : [] };
}

/**
 * The v2 `auth` family (spec/v2/core/identity.md, facets spec/v2/facets/auth.schema.json): the lanes a
 * caller may authenticate on. Listed only while an identity-provider lane is configured (the v1
 * document's `auth.oidc` / `auth.oauth2`, src/platform/identity/auth-profiles.advertiser.ts, or the
 * SAML / SCIM lanes its `auth.profiles` names): API keys (revoked on the next request), the OIDC and
 * OAuth2 lanes with their issuers (tokens live until `exp`, and SCIM deprovisioning is rechecked on
 * every request), SAML with its providers' entityIDs (assertions honoured until NotOnOrAfter, the SCIM
 * link's deactivation consulted at every sign-in) and SCIM with the entityIDs its connections are bound
 * to. With both SAML and SCIM, `subjectLinkKey` names the class links are formed under (v2 drops
 * `subjectLinking`: the two lanes imply it). RFC 9728 metadata (`/.well-known/oauth-protected-resource`)
 * and the 401/403 challenges project the OIDC and OAuth2 lanes.
 */
export const AUTH_RECORD: V2FamilyRecord = {
  family: 'auth',
  record: (v1, ctx) => {
    const auth = v1.auth as V1Auth | undefined;
    const oidcIssuers = Array.isArray(auth?.oidc?.issuers) ? auth.oidc.issuers.filter((i): i is string => typeof i === 'string') : [];
    const oauth2Issuer = typeof auth?.oauth2?.issuer === 'string' ? auth.oauth2.issuer : undefined;
    const saml = ctx.identityLanes?.saml ?? [];
    const scim = ctx.identityLanes?.scim ?? [];
    if (!oidcIssuers.length && !oauth2Issuer && !saml.length && !scim.length) return undefined;
    const linkKey = saml.length && scim.length && typeof auth?.subjectLinkKey === 'string' ? auth.subjectLinkKey : undefined;
    return {
      status: 'experimental',
      since: '2.0',
      until: '2027-06-30',
      witness: 'seam-gated',
      lanes: [
        { lane: 'api-key', issuers: [ctx.origin ?? 'openwop-host'], revocation: 'next-request', minimumAssurance: 'bearer' },
        ...(oidcIssuers.length ? [{ lane: 'oidc', issuers: oidcIssuers, revocation: 'exp-and-recheck', minimumAssurance: 'bearer' }] : []),
        ...(oauth2Issuer ? [{ lane: 'oauth2', issuers: [oauth2Issuer], revocation: 'exp-and-recheck', minimumAssurance: 'bearer' }] : []),
        ...(saml.length ? [{ lane: 'saml', issuers: saml, revocation: 'not-on-or-after', minimumAssurance: 'bearer' }] : []),
        ...(scim.length ? [{ lane: 'scim', issuers: scim, revocation: 'bound-connection', minimumAssurance: 'bearer' }] : []),
      ],
      ...(linkKey ? { subjectLinkKey: linkKey } : {}),
    };
  },
};
