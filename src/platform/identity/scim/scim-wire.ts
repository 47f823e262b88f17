import type { ScimGroupEntity, ScimUserEntity } from './scim.entities';

/** SCIM 2.0 wire shapes (RFC 7643 core schemas, RFC 7644 protocol messages). */
export const USER_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:User';
export const GROUP_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:Group';
export const LIST_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:ListResponse';
export const PATCH_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
export const ERROR_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:Error';

/** A SCIM protocol error (RFC 7644 §3.12): rendered as the SCIM error message, never the host envelope. */
export class ScimError {
  constructor(
    readonly status: number,
    readonly detail: string,
    readonly scimType?: 'invalidFilter' | 'uniqueness' | 'invalidValue' | 'invalidSyntax' | 'noTarget' | 'mutability',
  ) {}

  body(): Record<string, unknown> {
    return { schemas: [ERROR_SCHEMA], status: String(this.status), detail: this.detail, ...(this.scimType ? { scimType: this.scimType } : {}) };
  }
}

/** Attributes the host keeps itself; everything else a client sends is stored as given and echoed. */
const OWN = new Set(['schemas', 'id', 'meta', 'userName', 'externalId', 'active', 'members', 'displayName', 'password']);

export function userAttributes(body: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(body)) if (!OWN.has(k)) out[k] = v;
  // displayName is a plain attribute of a user (a group's is its key).
  if (typeof body.displayName === 'string') out.displayName = body.displayName;
  return out;
}

export function renderUser(u: ScimUserEntity, base: string, groups: ScimGroupEntity[] = []): Record<string, unknown> {
  return {
    schemas: [USER_SCHEMA],
    id: u.id,
    ...(u.externalId ? { externalId: u.externalId } : {}),
    userName: u.userName,
    ...u.attributes,
    active: u.active,
    groups: groups.map((g) => ({ value: g.id, display: g.displayName, $ref: `${base}/Groups/${g.id}` })),
    meta: { resourceType: 'User', created: u.createdAt.toISOString(), lastModified: u.updatedAt.toISOString(), version: `W/"${u.version}"`, location: `${base}/Users/${u.id}` },
  };
}

export function renderGroup(g: ScimGroupEntity, base: string, users: Map<string, ScimUserEntity>): Record<string, unknown> {
  return {
    schemas: [GROUP_SCHEMA],
    id: g.id,
    ...(g.externalId ? { externalId: g.externalId } : {}),
    displayName: g.displayName,
    members: g.members.filter((id) => users.has(id)).map((id) => ({ value: id, display: users.get(id)!.userName, $ref: `${base}/Users/${id}` })),
    meta: { resourceType: 'Group', created: g.createdAt.toISOString(), lastModified: g.updatedAt.toISOString(), version: `W/"${g.version}"`, location: `${base}/Groups/${g.id}` },
  };
}

export function listResponse(resources: unknown[], total: number, startIndex: number): Record<string, unknown> {
  return { schemas: [LIST_SCHEMA], totalResults: total, startIndex, itemsPerPage: resources.length, Resources: resources };
}

/**
 * The filters a provisioning client sends (RFC 7644 §3.4.2.2): `<attr> eq "<value>"` on userName,
 * externalId or displayName (what Entra, Okta and Keycloak look users and groups up by). Anything
 * else is `invalidFilter` (400), never a silently wider list.
 */
export function parseFilter(filter: string | undefined, allowed: readonly string[]): { attr: string; value: string } | undefined {
  if (filter === undefined || filter.trim() === '') return undefined;
  const m = /^\s*([A-Za-z][A-Za-z0-9.]*)\s+eq\s+"((?:[^"\\]|\\.)*)"\s*$/i.exec(filter);
  const attr = m && allowed.find((a) => a.toLowerCase() === m[1].toLowerCase());
  if (!m || !attr) throw new ScimError(400, `Unsupported filter; supported: ${allowed.map((a) => `${a} eq "..."`).join(', ')}.`, 'invalidFilter');
  return { attr, value: JSON.parse(`"${m[2]}"`) as string };
}

export interface PatchOperation {
  op: 'add' | 'remove' | 'replace';
  path?: string;
  value?: unknown;
}

/** The operations of a PatchOp message (RFC 7644 §3.5.2); `op` case-insensitive as Entra sends it. */
export function patchOperations(body: unknown): PatchOperation[] {
  const b = body as { schemas?: unknown; Operations?: unknown };
  if (!b || !Array.isArray(b.schemas) || !b.schemas.includes(PATCH_SCHEMA) || !Array.isArray(b.Operations)) {
    throw new ScimError(400, `A PATCH body is a ${PATCH_SCHEMA} message with Operations.`, 'invalidSyntax');
  }
  return b.Operations.map((o: { op?: unknown; path?: unknown; value?: unknown }) => {
    const op = typeof o?.op === 'string' ? o.op.toLowerCase() : '';
    if (op !== 'add' && op !== 'remove' && op !== 'replace') throw new ScimError(400, `Unknown patch op "${String(o?.op)}".`, 'invalidSyntax');
    if (o.path !== undefined && typeof o.path !== 'string') throw new ScimError(400, 'A patch path is a string.', 'invalidSyntax');
    return { op, ...(o.path !== undefined ? { path: o.path as string } : {}), ...(o.value !== undefined ? { value: o.value } : {}) };
  });
}

/** `active` from a patch value: a boolean, or the string Entra sends ("False"). */
export function booleanValue(v: unknown): boolean {
  if (typeof v === 'boolean') return v;
  if (typeof v === 'string' && /^(true|false)$/i.test(v)) return v.toLowerCase() === 'true';
  throw new ScimError(400, '`active` must be a boolean.', 'invalidValue');
}
