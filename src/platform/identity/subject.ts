import type { Principal } from './principal';

/**
 * The v2 Subject of a run's owner (spec v2 identity.md §1, `schemas/v2/subject.schema.json`):
 * who created the run, through which credential lane. Recorded on the run when it is created
 * (`metadata.subject`), whichever major created it, so a major-2 read renders
 * `owner: { tenant, workspace?, subject }` from what was true at creation rather than from the
 * caller of the read. A run created before the host recorded subjects reads as a legacy subject
 * (`issuer: urn:openwop:legacy`, identity.md §A.3).
 */
export interface Subject {
  issuer: string;
  subjectId: string;
  tenant: string;
  lane: 'api-key' | 'oauth2' | 'oidc' | 'session' | 'workload';
  kind: 'user' | 'workload';
}

/** The issuers this host names for the credentials it verifies itself. */
export const API_KEY_ISSUER = 'urn:openwop-host:api-keys';
export const SYSTEM_ISSUER = 'urn:openwop-host:system';
/** A bearer token verified by the configured JWKS whose issuer the host was not told. */
export const BEARER_ISSUER = 'urn:openwop-host:bearer';
export const LEGACY_ISSUER = 'urn:openwop:legacy';

/**
 * The subject of a principal: an API key is the `api-key` lane (a workload credential), a verified
 * JWT bearer token the `oauth2` lane (a user, issued by the configured issuer), the host's own work
 * (scheduler, CLI, child runs it starts) the `workload` lane under the host's issuer.
 */
export function subjectOf(p: Pick<Principal, 'tenant' | 'principal' | 'kind' | 'idp'>, jwtIssuer?: string): Subject {
  // An identity provider's token names its own issuer and lane; a client-credentials client is a workload.
  if (p.idp) return { issuer: p.idp.issuer, subjectId: p.principal, tenant: p.tenant, lane: p.idp.lane, kind: p.idp.lane === 'oauth2' ? 'workload' : 'user' };
  if (p.kind === 'api-key') return { issuer: API_KEY_ISSUER, subjectId: p.principal, tenant: p.tenant, lane: 'api-key', kind: 'workload' };
  if (p.kind === 'jwt') return { issuer: jwtIssuer && /^\S{1,1024}$/.test(jwtIssuer) ? jwtIssuer : BEARER_ISSUER, subjectId: p.principal, tenant: p.tenant, lane: 'oauth2', kind: 'user' };
  return { issuer: SYSTEM_ISSUER, subjectId: p.principal, tenant: p.tenant, lane: 'workload', kind: 'workload' };
}

/** A recorded subject read back (from a run's metadata), or undefined when it is not one. */
export function readSubject(v: unknown): Subject | undefined {
  if (!v || typeof v !== 'object') return undefined;
  const s = v as Record<string, unknown>;
  const str = (k: string) => typeof s[k] === 'string' && (s[k] as string).length > 0;
  return str('issuer') && str('subjectId') && str('tenant') && str('lane') && str('kind') ? (s as unknown as Subject) : undefined;
}

/** The owner of a run that predates subject recording: a legacy subject (never linked or delegated, §A.3). */
export function legacySubject(tenant: string, principal: string | undefined): Subject {
  const id = principal && /^[^\s/]{1,256}$/.test(principal) ? principal : 'unknown';
  return { issuer: LEGACY_ISSUER, subjectId: id, tenant, lane: 'workload', kind: 'workload' };
}
