import { ForbiddenError } from '../errors/domain-error';

/**
 * Who is calling, derived only from a verified credential (the protocol has no tenant header).
 * Passed explicitly from controller to service to repository.
 */
export interface Principal {
  tenant: string;
  workspace?: string;
  principal: string;
  scopes: ReadonlySet<string>;
  kind: 'api-key' | 'jwt' | 'system';
  /** API key id, when the credential is an API key. */
  keyId?: string;
  /** An identity provider's token (token-lanes.ts): its lane and issuer, recorded as the v2 owner subject. */
  idp?: { lane: 'oidc' | 'oauth2' | 'session'; issuer: string };
}

/**
 * What a tenant, workspace or principal id may look like, whatever the credential (API key or JWT):
 * 1-128 letters, digits and `._:@-`, starting with a letter or digit (so never a NUL, which
 * PostgreSQL cannot store, nor anything a log or a URL would have to escape).
 */
export const IDENTIFIER = /^[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}$/;

/** The tenant/workspace scope every tenant-owned query is filtered by. */
export interface TenantScope {
  tenant: string;
  workspace?: string;
}

/**
 * Tenant-wide state (connections and connection packs, which every workspace of the tenant shares)
 * changes only through a tenant-level credential: a workspace-bound one is refused with 403.
 */
export function requireTenantLevel(p: Pick<Principal, 'workspace'>, what: string): void {
  if (p.workspace) throw new ForbiddenError(`${what} are tenant-wide: only a tenant-level credential (one bound to no workspace) may change them.`, { tenantLevel: true });
}

export function hasScopes(p: Principal, required: readonly string[]): boolean {
  return required.every((s) => p.scopes.has(s));
}

/** A principal for work the host does on a tenant's behalf (scheduler, CLI). */
export function systemPrincipal(tenant: string, workspace?: string, scopes: readonly string[] = []): Principal {
  return { tenant, workspace, principal: 'system', scopes: new Set(scopes), kind: 'system' };
}
