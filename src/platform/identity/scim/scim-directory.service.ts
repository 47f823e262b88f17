import { timingSafeEqual } from 'node:crypto';
import { Inject, Injectable, Logger } from '@nestjs/common';
import { DataSource, In } from 'typeorm';
import { AuditLogService } from '../../audit/audit-log.service';
import { HOST_CONFIG, HostConfig } from '../../config/host-config';
import { ApiKeyService } from '../api-key.service';
import { IDENTIFIER } from '../principal';
import { ScimGroupEntity, ScimUserEntity } from './scim.entities';
import { booleanValue, PatchOperation, ScimError, userAttributes } from './scim-wire';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const SCIM_ACTOR = { principal: 'scim', kind: 'system' } as const;

/** A SAML subject's link to a SCIM user (subject linking, RFC 0159/0163): by `externalId`, only under the provider that feeds the directory. */
export type ScimLink =
  | { state: 'none'; otherRoot: boolean }
  | { state: 'active'; principal: string; groups: string[] }
  | { state: 'deprovisioned'; principal: string };

/** What provisioning says about a token's principal in a tenant. */
export type ScimSubject = { state: 'unknown' } | { state: 'active'; groups: string[] } | { state: 'deprovisioned' };

/**
 * The SCIM 2.0 directory of each tenant (the one writer of scim_user and scim_group). A user's
 * `userName` (or `externalId`) is the principal of its tokens and API keys: deactivating or deleting
 * the user revokes its API keys at once, and its identity-provider tokens are refused from then on
 * (TokenLanes and the JWT lane ask `subject` on every request). Its groups' display names are mapped
 * to host roles by the same per-tenant table as the OIDC groups claim.
 */
@Injectable()
export class ScimDirectory {
  private readonly log = new Logger('ScimDirectory');

  constructor(
    private readonly ds: DataSource,
    private readonly keys: ApiKeyService,
    private readonly audit: AuditLogService,
    @Inject(HOST_CONFIG) private readonly config: HostConfig,
  ) {}

  get enabled(): boolean {
    return (this.config.identity?.scimTokens.size ?? 0) > 0;
  }

  /** Whether a tenant's directory is provisioned over SCIM (a SCIM token names it). */
  enabledFor(tenant: string): boolean {
    for (const t of this.config.identity?.scimTokens.values() ?? []) if (t === tenant) return true;
    return false;
  }

  /** The SAML identity provider whose subjects this tenant's SCIM users link to (settings `scim: true`), if any. */
  linkRoot(tenant: string): string | null {
    return this.config.identity?.saml?.idps.find((p) => p.tenant === tenant && p.scim)?.id ?? null;
  }

  /**
   * The SCIM user a SAML subject of a provider links to: `externalId` equal to the subject (case-exact)
   * and provisioned under that provider. A user holding the same externalId under another provider is
   * reported (`otherRoot`) but never linked; a deactivated or deleted one is `deprovisioned`.
   */
  async linkOf(tenant: string, idp: string, subject: string): Promise<ScimLink> {
    const rows = await this.ds.getRepository(ScimUserEntity).findBy({ tenant, externalId: subject });
    const mine = rows.filter((u) => u.linkIdp === idp);
    if (!mine.length) return { state: 'none', otherRoot: rows.length > 0 };
    const live = mine.filter((u) => u.active && !u.deletedAt);
    if (!live.length) return { state: 'deprovisioned', principal: mine[0].userName };
    // A live user under the same principal name but deprovisioned elsewhere still denies (subject() is the gate of every lane).
    const provisioned = await this.subject(tenant, live[0].userName);
    if (provisioned.state !== 'active') return { state: 'deprovisioned', principal: live[0].userName };
    return { state: 'active', principal: live[0].userName, groups: provisioned.groups };
  }

  /** The tenant a SCIM bearer token provisions, compared in constant time against every configured token. */
  tenantOfToken(token: string): string | undefined {
    let found: string | undefined;
    const presented = Buffer.from(token);
    for (const [t, tenant] of this.config.identity?.scimTokens ?? []) {
      const expected = Buffer.from(t);
      if (expected.length === presented.length && timingSafeEqual(expected, presented)) found = tenant;
    }
    return found;
  }

  // ---- users ----

  async createUser(tenant: string, body: Record<string, unknown>): Promise<ScimUserEntity> {
    const userName = this.userName(body.userName);
    const externalId = this.optionalId(body.externalId, 'externalId');
    return this.ds.transaction(async (m) => {
      await m.query(`SELECT pg_advisory_xact_lock(hashtext($1))`, [`scim:${tenant}:${userName.toLowerCase()}`]);
      const taken = await m.getRepository(ScimUserEntity).createQueryBuilder('u').where('u.tenant = :tenant AND lower(u.user_name) = lower(:userName) AND u.deleted_at IS NULL', { tenant, userName }).getCount();
      if (taken) throw new ScimError(409, `A user with userName "${userName}" exists.`, 'uniqueness');
      const active = body.active === undefined ? true : booleanValue(body.active);
      const saved = await m.getRepository(ScimUserEntity).save(m.getRepository(ScimUserEntity).create({ tenant, userName, externalId, active, linkIdp: this.linkRoot(tenant), attributes: userAttributes(body), deletedAt: null }));
      await this.audit.record(m, { tenant, actor: SCIM_ACTOR, action: 'scim.user.provisioned', resource: { type: 'scim-user', id: saved.id }, details: { userName, active } });
      return saved;
    });
  }

  async getUser(tenant: string, id: string): Promise<ScimUserEntity> {
    const u = UUID.test(id) ? await this.ds.getRepository(ScimUserEntity).findOneBy({ tenant, id }) : null;
    if (!u || u.deletedAt) throw new ScimError(404, `No user ${id}.`);
    return u;
  }

  async listUsers(tenant: string, filter: { attr: string; value: string } | undefined, startIndex: number, count: number): Promise<{ rows: ScimUserEntity[]; total: number }> {
    const qb = this.ds.getRepository(ScimUserEntity).createQueryBuilder('u').where('u.tenant = :tenant AND u.deleted_at IS NULL', { tenant });
    // userName is case-insensitive (RFC 7643 §4.1.1); externalId is case-exact.
    if (filter?.attr === 'userName') qb.andWhere('lower(u.user_name) = lower(:v)', { v: filter.value });
    if (filter?.attr === 'externalId') qb.andWhere('u.external_id = :v', { v: filter.value });
    const [rows, total] = await qb.orderBy('u.created_at', 'ASC').addOrderBy('u.id', 'ASC').skip(startIndex - 1).take(count).getManyAndCount();
    return { rows, total };
  }

  async replaceUser(tenant: string, id: string, body: Record<string, unknown>): Promise<ScimUserEntity> {
    const u = await this.getUser(tenant, id);
    const userName = this.userName(body.userName);
    if (userName.toLowerCase() !== u.userName.toLowerCase()) await this.assertFree(tenant, userName);
    return this.update(u, { userName, externalId: this.optionalId(body.externalId, 'externalId'), active: body.active === undefined ? true : booleanValue(body.active), attributes: userAttributes(body) });
  }

  async patchUser(tenant: string, id: string, ops: PatchOperation[]): Promise<ScimUserEntity> {
    const u = await this.getUser(tenant, id);
    const next = { userName: u.userName, externalId: u.externalId, active: u.active, attributes: { ...u.attributes } };
    for (const op of ops) {
      // A path-less replace/add carries an object of attributes (Entra, Okta).
      const entries: Array<[string, unknown]> = op.path ? [[op.path, op.value]] : Object.entries((op.value as Record<string, unknown>) ?? {});
      for (const [path, value] of entries) {
        if (path === 'active') next.active = op.op === 'remove' ? false : booleanValue(value);
        else if (path === 'userName') next.userName = this.userName(value);
        else if (path === 'externalId') next.externalId = op.op === 'remove' ? null : this.optionalId(value, 'externalId');
        else if (/^[A-Za-z][A-Za-z0-9]*(\.[A-Za-z][A-Za-z0-9]*)?$/.test(path)) setAttribute(next.attributes, path, op.op === 'remove' ? undefined : value);
        else throw new ScimError(400, `Unsupported patch path "${path}".`, 'invalidSyntax');
      }
    }
    if (next.userName.toLowerCase() !== u.userName.toLowerCase()) await this.assertFree(tenant, next.userName);
    return this.update(u, next);
  }

  async deleteUser(tenant: string, id: string): Promise<void> {
    const u = await this.getUser(tenant, id);
    await this.ds.transaction(async (m) => {
      await m.getRepository(ScimUserEntity).update({ id: u.id }, { deletedAt: new Date(), active: false, version: u.version + 1 });
      await m.query(`UPDATE "scim_group" SET "members" = array_remove("members", $1::uuid), "version" = "version" + 1, "updated_at" = now() WHERE "tenant" = $2 AND $1::uuid = ANY("members")`, [u.id, tenant]);
      await this.audit.record(m, { tenant, actor: SCIM_ACTOR, action: 'scim.user.deprovisioned', resource: { type: 'scim-user', id: u.id }, details: { userName: u.userName, reason: 'deleted' } });
    });
    await this.revokeKeys(u);
  }

  /** What provisioning says about a principal: unknown to SCIM, active (with its groups), or deactivated/deleted. */
  async subject(tenant: string, principal: string): Promise<ScimSubject> {
    if (!this.enabled) return { state: 'unknown' };
    const rows = await this.ds.getRepository(ScimUserEntity).createQueryBuilder('u')
      .where('u.tenant = :tenant AND (lower(u.user_name) = lower(:p) OR u.external_id = :p)', { tenant, p: principal }).getMany();
    if (!rows.length) return { state: 'unknown' };
    const live = rows.filter((u) => u.active && !u.deletedAt);
    if (!live.length) return { state: 'deprovisioned' };
    const groups = await this.groupsOf(tenant, live.map((u) => u.id));
    return { state: 'active', groups: [...new Set(groups.map((g) => g.displayName))] };
  }

  async groupsOf(tenant: string, userIds: string[]): Promise<ScimGroupEntity[]> {
    if (!userIds.length) return [];
    return this.ds.getRepository(ScimGroupEntity).createQueryBuilder('g').where('g.tenant = :tenant AND g.members && :ids::uuid[]', { tenant, ids: userIds }).orderBy('g.display_name').getMany();
  }

  // ---- groups ----

  async createGroup(tenant: string, body: Record<string, unknown>): Promise<ScimGroupEntity> {
    const displayName = this.displayName(body.displayName);
    const members = await this.memberIds(tenant, body.members);
    return this.ds.transaction(async (m) => {
      await m.query(`SELECT pg_advisory_xact_lock(hashtext($1))`, [`scim-group:${tenant}:${displayName}`]);
      if (await m.getRepository(ScimGroupEntity).countBy({ tenant, displayName })) throw new ScimError(409, `A group named "${displayName}" exists.`, 'uniqueness');
      const repo = m.getRepository(ScimGroupEntity);
      return repo.save(repo.create({ tenant, displayName, externalId: this.optionalId(body.externalId, 'externalId'), members }));
    });
  }

  async getGroup(tenant: string, id: string): Promise<ScimGroupEntity> {
    const g = UUID.test(id) ? await this.ds.getRepository(ScimGroupEntity).findOneBy({ tenant, id }) : null;
    if (!g) throw new ScimError(404, `No group ${id}.`);
    return g;
  }

  async listGroups(tenant: string, filter: { attr: string; value: string } | undefined, startIndex: number, count: number): Promise<{ rows: ScimGroupEntity[]; total: number }> {
    const qb = this.ds.getRepository(ScimGroupEntity).createQueryBuilder('g').where('g.tenant = :tenant', { tenant });
    if (filter?.attr === 'displayName') qb.andWhere('g.display_name = :v', { v: filter.value });
    if (filter?.attr === 'externalId') qb.andWhere('g.external_id = :v', { v: filter.value });
    const [rows, total] = await qb.orderBy('g.created_at', 'ASC').addOrderBy('g.id', 'ASC').skip(startIndex - 1).take(count).getManyAndCount();
    return { rows, total };
  }

  async patchGroup(tenant: string, id: string, ops: PatchOperation[]): Promise<ScimGroupEntity> {
    const g = await this.getGroup(tenant, id);
    let members = new Set(g.members);
    let displayName = g.displayName;
    for (const op of ops) {
      const removeFilter = op.path ? /^members\[value eq "([^"]+)"\]$/.exec(op.path) : null;
      if (removeFilter && op.op === 'remove') members.delete(removeFilter[1]);
      else if (op.path === 'members' || (!op.path && op.value && typeof op.value === 'object' && 'members' in (op.value as object))) {
        const value = op.path ? op.value : (op.value as { members: unknown }).members;
        if (op.op === 'remove') {
          if (value === undefined) members = new Set();
          else for (const v of await this.memberIds(tenant, value, false)) members.delete(v);
        } else {
          const ids = await this.memberIds(tenant, value);
          if (op.op === 'replace') members = new Set(ids);
          else for (const v of ids) members.add(v);
        }
      } else if (op.path === 'displayName' || (!op.path && op.value && typeof op.value === 'object' && 'displayName' in (op.value as object))) {
        displayName = this.displayName(op.path ? op.value : (op.value as { displayName: unknown }).displayName);
      } else throw new ScimError(400, `Unsupported group patch ${op.op} ${op.path ?? ''}.`, 'invalidSyntax');
    }
    return this.saveGroup(g, displayName, [...members]);
  }

  async replaceGroup(tenant: string, id: string, body: Record<string, unknown>): Promise<ScimGroupEntity> {
    const g = await this.getGroup(tenant, id);
    return this.saveGroup(g, this.displayName(body.displayName), await this.memberIds(tenant, body.members));
  }

  async deleteGroup(tenant: string, id: string): Promise<void> {
    const g = await this.getGroup(tenant, id);
    await this.ds.getRepository(ScimGroupEntity).delete({ id: g.id });
  }

  async usersById(tenant: string, ids: string[]): Promise<Map<string, ScimUserEntity>> {
    if (!ids.length) return new Map();
    const rows = await this.ds.getRepository(ScimUserEntity).findBy({ tenant, id: In(ids) });
    return new Map(rows.filter((u) => !u.deletedAt).map((u) => [u.id, u]));
  }

  // ---- internals ----

  private async saveGroup(g: ScimGroupEntity, displayName: string, members: string[]): Promise<ScimGroupEntity> {
    if (displayName !== g.displayName && (await this.ds.getRepository(ScimGroupEntity).countBy({ tenant: g.tenant, displayName }))) {
      throw new ScimError(409, `A group named "${displayName}" exists.`, 'uniqueness');
    }
    await this.ds.getRepository(ScimGroupEntity).update({ id: g.id }, { displayName, members, version: g.version + 1 });
    return this.getGroup(g.tenant, g.id);
  }

  private async update(u: ScimUserEntity, next: Pick<ScimUserEntity, 'userName' | 'externalId' | 'active' | 'attributes'>): Promise<ScimUserEntity> {
    // A user provisioned before SAML was configured links under the directory's provider from its next update on.
    await this.ds.getRepository(ScimUserEntity).update({ id: u.id }, { ...next, attributes: next.attributes as never, version: u.version + 1, ...(u.linkIdp ? {} : { linkIdp: this.linkRoot(u.tenant) }) });
    const after = await this.getUser(u.tenant, u.id);
    // Deactivation (or a rename, which leaves the old principal unprovisioned) revokes the keys of the principal it held.
    if ((u.active && !after.active) || u.userName !== after.userName || (u.externalId && u.externalId !== after.externalId)) await this.revokeKeys(u);
    if (u.active !== after.active) {
      await this.ds.transaction((m) =>
        this.audit.record(m, {
          tenant: u.tenant,
          actor: SCIM_ACTOR,
          action: after.active ? 'scim.user.reactivated' : 'scim.user.deprovisioned',
          resource: { type: 'scim-user', id: u.id },
          details: { userName: after.userName, ...(after.active ? {} : { reason: 'deactivated' }) },
        }),
      );
    }
    return after;
  }

  /** Revokes every unrevoked API key of the user's principal(s) in its tenant (audited as key.revoked). */
  private async revokeKeys(u: Pick<ScimUserEntity, 'tenant' | 'userName' | 'externalId'>): Promise<number> {
    const names = new Set([u.userName.toLowerCase(), ...(u.externalId ? [u.externalId] : [])]);
    const keys = (await this.keys.list(u.tenant)).filter((k) => !k.revokedAt && (names.has(k.principal.toLowerCase()) || names.has(k.principal)));
    for (const k of keys) await this.keys.revoke(k.id, u.tenant, SCIM_ACTOR);
    if (keys.length) this.log.log({ msg: 'SCIM deprovisioning revoked API keys', tenant: u.tenant, keys: keys.length });
    return keys.length;
  }

  private async assertFree(tenant: string, userName: string): Promise<void> {
    const taken = await this.ds.getRepository(ScimUserEntity).createQueryBuilder('u').where('u.tenant = :tenant AND lower(u.user_name) = lower(:userName) AND u.deleted_at IS NULL', { tenant, userName }).getCount();
    if (taken) throw new ScimError(409, `A user with userName "${userName}" exists.`, 'uniqueness');
  }

  private async memberIds(tenant: string, members: unknown, mustExist = true): Promise<string[]> {
    if (members === undefined || members === null) return [];
    if (!Array.isArray(members)) throw new ScimError(400, '`members` is a list of {value}.', 'invalidSyntax');
    const ids = members.map((m: { value?: unknown }) => m?.value);
    if (!ids.every((v): v is string => typeof v === 'string' && UUID.test(v))) throw new ScimError(400, 'Each member is {value: <user id>}.', 'invalidValue');
    if (mustExist) {
      const known = await this.usersById(tenant, ids);
      const missing = ids.filter((i) => !known.has(i));
      if (missing.length) throw new ScimError(400, `Unknown member ${missing[0]}.`, 'invalidValue');
    }
    return [...new Set(ids)];
  }

  /** A userName must be a principal the host can carry (RFC 7643 leaves its syntax to the service provider). */
  private userName(v: unknown): string {
    if (typeof v !== 'string' || !IDENTIFIER.test(v)) throw new ScimError(400, '`userName` is required: 1-128 letters, digits and ._:@-.', 'invalidValue');
    return v;
  }

  private displayName(v: unknown): string {
    if (typeof v !== 'string' || v.length < 1 || v.length > 256) throw new ScimError(400, '`displayName` is required (1-256 characters).', 'invalidValue');
    return v;
  }

  private optionalId(v: unknown, what: string): string | null {
    if (v === undefined || v === null) return null;
    if (typeof v !== 'string' || !IDENTIFIER.test(v)) throw new ScimError(400, `\`${what}\` must be 1-128 letters, digits and ._:@-.`, 'invalidValue');
    return v;
  }
}

/** Sets (or, with undefined, removes) an attribute or a sub-attribute (`name.givenName`, RFC 7644 §3.5.2 attribute paths). */
function setAttribute(attrs: Record<string, unknown>, path: string, value: unknown): void {
  const [head, sub] = path.split('.');
  if (head === '__proto__' || sub === '__proto__') throw new ScimError(400, `Unsupported patch path "${path}".`, 'invalidSyntax');
  if (!sub) {
    if (value === undefined) delete attrs[head];
    else attrs[head] = value;
    return;
  }
  const parent = attrs[head] && typeof attrs[head] === 'object' && !Array.isArray(attrs[head]) ? { ...(attrs[head] as Record<string, unknown>) } : {};
  if (value === undefined) delete parent[sub];
  else parent[sub] = value;
  attrs[head] = parent;
}
