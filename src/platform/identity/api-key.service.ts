import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { Inject, Injectable, Logger } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { rowsOf } from '../database/rows';
import { AuditSigningService } from '../audit/audit-signing.service';
import { AuditLogService, AuditRecord } from '../audit/audit-log.service';
import { HOST_CONFIG, HostConfig } from '../config/host-config';
import { ConflictError, ValidationError, NotFoundError } from '../errors/domain-error';
import type { CursorBinding } from '../pagination/cursor';
import { keysetPage } from '../pagination/keyset';
import type { Page, PageRequest } from '../pagination/page-query';
import { ApiKeyEntity } from './api-key.entity';
import { UUID } from '../ids';
import { IDENTIFIER as IDENT, Principal, TenantScope } from './principal';
import { expandRoles, isValidScope, roleOf, ROLES } from './scopes';
import { inScope, scopedQuery } from '../tenancy/workspace-scope';

export interface CreateApiKeyInput {
  tenant: string;
  workspace?: string;
  principal: string;
  scopes?: string[];
  roles?: string[];
  expiresAt?: Date;
  name?: string;
}

/** Who mints or revokes a key, as the audit log records it (the CLI and the bootstrap act as `system`). */
export type KeyActor = AuditRecord['actor'];
const SYSTEM_ACTOR: KeyActor = { principal: 'system', kind: 'system' };

export interface ApiKeyView {
  id: string;
  tenant: string;
  workspace?: string;
  principal: string;
  name?: string;
  scopes: string[];
  roles: string[];
  prefix: string;
  expiresAt?: string;
  revokedAt?: string;
  createdAt: string;
  /** Set once the key was rotated: when, and the id of the key that replaced it (expiresAt ends the overlap). */
  rotatedAt?: string;
  rotatedTo?: string;
  /** The key this one replaced by a rotation. */
  rotatedFrom?: string;
}

export interface RotateApiKeyInput {
  /** Seconds the rotated key keeps working next to its successor (default and bounds: HostConfig.keyRotation). */
  overlapSeconds?: number;
  /** Expiry of the successor; by default the rotated key's own expiry (none if it had none). */
  expiresAt?: Date;
  /** Called with the key to rotate before anything is written; throws to refuse (a caller lacking the key's scopes). */
  authorize?: (key: ApiKeyView) => void;
}

export interface RotatedApiKey {
  /** The successor's secret, shown once. */
  key: string;
  view: ApiKeyView;
  /** The rotated key as it now stands: its expiresAt is the end of the overlap. */
  previous: ApiKeyView;
}

/** The PostgreSQL notification channel a revocation is announced on (payload: the key's lookup id). */
export const KEY_REVOKED_CHANNEL = 'openwop_api_key_revoked';

const LOOKUP_CHARS = 'abcdefghijklmnopqrstuvwxyz0123456789';

function lookupId(): string {
  const bytes = randomBytes(12);
  let s = '';
  for (const b of bytes) s += LOOKUP_CHARS[b % LOOKUP_CHARS.length];
  return s;
}

function hash(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

/**
 * API keys: `<prefix><12-char lookup id>_<43-char secret>` carrying 256 random bits in the secret,
 * stored only as a SHA-256 hash, compared in constant time, bound to tenant / workspace / principal.
 */
@Injectable()
export class ApiKeyService {
  /** Verified keys, briefly, so the hot path does not hit the database on every request. */
  private readonly cache = new Map<string, { key: ApiKeyEntity; until: number }>();
  /** The longest a verified key is trusted without reading it again. */
  static readonly CACHE_MS = 5_000;
  /** How long this replica trusts a verified key now (shorter while revocations cannot arrive as notifications: KeyRevocationWatcher). */
  cacheMs = ApiKeyService.CACHE_MS;
  /**
   * Lookup ids no key has (a refusal as `unknown` without a row), briefly, so a client repeating an
   * unknown key does not cost a read per request: until `cacheMs` after the read, at most
   * REFUSED_MAX of them (the oldest dropped first). A key minted here or on another replica is
   * announced with its lookup id (the revocation notification, which every replica's cache
   * forgets), so a refusal cached before its key existed does not outlive the mint.
   */
  private readonly refused = new Map<string, number>();
  static readonly REFUSED_MAX = 1_000;

  private readonly audit: AuditLogService;
  private readonly logger = new Logger('api-keys');

  constructor(
    private readonly ds: DataSource,
    @Inject(HOST_CONFIG) private readonly config: HostConfig,
    audit?: AuditLogService,
  ) {
    // The CLI builds this service without Nest: it records to the same audit log.
    this.audit = audit ?? new AuditLogService(ds, new AuditSigningService(ds, undefined, config), config);
  }

  async create(input: CreateApiKeyInput, actor: KeyActor = SYSTEM_ACTOR): Promise<{ key: string; view: ApiKeyView }> {
    for (const [field, v] of [['tenant', input.tenant], ['principal', input.principal]] as const) {
      if (!IDENT.test(v)) throw new ValidationError(`${field} must be 1-128 characters of letters, digits and ._:@-`, { field });
    }
    if (input.workspace !== undefined && !IDENT.test(input.workspace)) {
      throw new ValidationError('workspace must be 1-128 characters of letters, digits and ._:@-', { field: 'workspace' });
    }
    const scopes = [...new Set(input.scopes ?? [])];
    const roles = [...new Set(input.roles ?? [])];
    const badScope = scopes.find((s) => !isValidScope(s));
    if (badScope) throw new ValidationError(`"${badScope}" is not a scope (expected name:action)`, { field: 'scopes' });
    const badRole = roles.find((r) => !roleOf(r));
    if (badRole) throw new ValidationError(`unknown role "${badRole}"; roles: ${Object.keys(ROLES).join(', ')}`, { field: 'roles' });
    if (!scopes.length && !roles.length) throw new ValidationError('a key needs at least one scope or role', { field: 'scopes' });
    if (input.expiresAt && Number.isNaN(input.expiresAt.getTime())) throw new ValidationError('expiresAt is not a date', { field: 'expiresAt' });
    const { key, entity } = await this.ds.transaction((m) => this.insert(m, { ...input, scopes, roles }, actor));
    this.forget(entity.lookupId);
    return { key, view: this.view(entity) };
  }

  /** Inserts a validated key and records `key.created`; the secret never leaves the returned string. */
  private async insert(
    m: EntityManager,
    input: CreateApiKeyInput & { scopes: string[]; roles: string[]; rotatedFrom?: string },
    actor: KeyActor,
  ): Promise<{ key: string; entity: ApiKeyEntity }> {
    const lookup = lookupId();
    const secret = randomBytes(32).toString('base64url');
    const repo = m.getRepository(ApiKeyEntity);
    const saved = await repo.save(
      repo.create({
        lookupId: lookup,
        secretHash: hash(secret),
        tenant: input.tenant,
        workspace: input.workspace ?? null,
        principal: input.principal,
        name: input.name ?? null,
        scopes: input.scopes,
        roles: input.roles,
        expiresAt: input.expiresAt ?? null,
        revokedAt: null,
        rotatedAt: null,
        rotatedTo: null,
        rotatedFrom: input.rotatedFrom ?? null,
        rotationUsedAt: null,
      }),
    );
    // Every replica forgets a refusal it may hold for the new lookup id (delivered at commit).
    await m.query(`SELECT pg_notify($1, $2)`, [KEY_REVOKED_CHANNEL, lookup]);
    // The scopes a key grants are the audit-relevant fact; its secret never leaves this method.
    await this.audit.record(m, {
      tenant: saved.tenant,
      workspace: saved.workspace ?? undefined,
      actor,
      action: 'key.created',
      resource: { type: 'api-key', id: saved.id },
      details: {
        keyPrincipal: saved.principal,
        scopes: saved.scopes,
        roles: saved.roles,
        expiresAt: saved.expiresAt?.toISOString() ?? null,
        ...(input.rotatedFrom ? { rotatedFrom: input.rotatedFrom } : {}),
      },
    });
    return { key: `${this.config.apiKeyPrefix}${lookup}_${secret}`, entity: saved };
  }

  /**
   * Rotates a key (openwop-auth-api-key-rotation): mints its successor (same tenant, workspace,
   * principal, scopes, roles and name) and lets the old key work on for the overlap only: its
   * expiresAt becomes now + overlap (on the database clock; never later than an expiry it already
   * had), after which it is refused like any expired key. With a scope, only a key of that scope (any
   * other answers not found, like an unknown id). A key is rotated once: a revoked, expired or already
   * rotated key is refused (409). Both halves are audited (`key.created` with `rotatedFrom`,
   * `key.rotated`), and every replica drops the old key from its verification cache.
   */
  async rotate(id: string, scope: TenantScope | undefined, input: RotateApiKeyInput = {}, actor: KeyActor = SYSTEM_ACTOR): Promise<RotatedApiKey> {
    const { minOverlapS, maxOverlapS, defaultOverlapS } = this.config.keyRotation;
    const overlap = input.overlapSeconds ?? defaultOverlapS;
    if (!Number.isInteger(overlap) || overlap < minOverlapS || overlap > maxOverlapS) {
      throw new ValidationError(`overlapSeconds must be a whole number from ${minOverlapS} to ${maxOverlapS}`, { field: 'overlapSeconds', minOverlapSeconds: minOverlapS, maxOverlapSeconds: maxOverlapS });
    }
    if (input.expiresAt && Number.isNaN(input.expiresAt.getTime())) throw new ValidationError('expiresAt is not a date', { field: 'expiresAt' });
    if (!UUID.test(id)) throw new NotFoundError('No such API key.');
    const out = await this.ds.transaction(async (m) => {
      const repo = m.getRepository(ApiKeyEntity);
      const old = await repo.findOne({ where: scope ? inScope(scope, { id }) : { id }, lock: { mode: 'pessimistic_write' } });
      if (!old) throw new NotFoundError('No such API key.');
      input.authorize?.(this.view(old));
      if (old.revokedAt) throw new ConflictError('key_revoked', 'A revoked key cannot be rotated.');
      if (old.rotatedTo) throw new ConflictError('key_already_rotated', 'The key was already rotated; rotate its successor.', { successorId: old.rotatedTo });
      const [{ now }] = (await m.query(`SELECT now() AS "now"`)) as Array<{ now: Date }>;
      if (old.expiresAt && old.expiresAt.getTime() <= now.getTime()) throw new ConflictError('key_expired', 'An expired key cannot be rotated.');
      const expiresAt = input.expiresAt ?? old.expiresAt ?? undefined;
      if (expiresAt && expiresAt.getTime() <= now.getTime()) throw new ValidationError('expiresAt must be in the future', { field: 'expiresAt' });
      const created = await this.insert(m, {
        tenant: old.tenant,
        workspace: old.workspace ?? undefined,
        principal: old.principal,
        name: old.name ?? undefined,
        scopes: old.scopes,
        roles: old.roles,
        expiresAt,
        rotatedFrom: old.id,
      }, actor);
      const rows = rowsOf<{ expires_at: Date; rotated_at: Date }>(await m.query(
        `UPDATE "api_key" SET "rotated_at" = now(), "rotated_to" = $2,
           "expires_at" = LEAST(COALESCE("expires_at", 'infinity'::timestamptz), now() + make_interval(secs => $3))
         WHERE "id" = $1 AND "rotated_to" IS NULL AND "revoked_at" IS NULL RETURNING "expires_at", "rotated_at"`,
        [old.id, created.entity.id, overlap],
      ));
      if (!rows.length) throw new ConflictError('key_already_rotated', 'The key was rotated or revoked meanwhile.');
      Object.assign(old, { expiresAt: rows[0].expires_at, rotatedAt: rows[0].rotated_at, rotatedTo: created.entity.id });
      // Other replicas drop the old key from their caches now, not at the end of their cache window.
      await m.query(`SELECT pg_notify($1, $2)`, [KEY_REVOKED_CHANNEL, old.lookupId]);
      await this.audit.record(m, {
        tenant: old.tenant,
        workspace: old.workspace ?? undefined,
        actor,
        action: 'key.rotated',
        resource: { type: 'api-key', id: old.id },
        details: { keyPrincipal: old.principal, successorId: created.entity.id, overlapSeconds: overlap, overlapEndsAt: old.expiresAt!.toISOString() },
      });
      return { key: created.key, view: this.view(created.entity), previous: this.view(old), lookup: old.lookupId };
    });
    this.forget(out.lookup);
    return { key: out.key, view: out.view, previous: out.previous };
  }

  /**
   * `key.used` (auth-profiles.md §openwop-auth-api-key-rotation): the first authentication after a
   * rotation of the rotated key and of its successor, once each (a conditional update decides which
   * replica records it), so the audit log shows whether clients still use the old key and have moved
   * to the new one. Other uses are not audited (one entry per request would swamp the chain). A
   * failure to record is logged and does not refuse the request.
   */
  private async noteRotationUse(key: ApiKeyEntity): Promise<void> {
    try {
      await this.ds.transaction(async (m) => {
        const rows = rowsOf<{ rotation_used_at: Date }>(await m.query(
          `UPDATE "api_key" SET "rotation_used_at" = now() WHERE "id" = $1 AND "rotation_used_at" IS NULL RETURNING "rotation_used_at"`,
          [key.id],
        ));
        key.rotationUsedAt = rows[0]?.rotation_used_at ?? key.rotationUsedAt ?? new Date();
        if (!rows.length) return;
        await this.audit.record(m, {
          tenant: key.tenant,
          workspace: key.workspace ?? undefined,
          actor: { principal: key.principal, kind: 'api-key', keyId: key.id },
          action: 'key.used',
          resource: { type: 'api-key', id: key.id },
          details: { keyPrincipal: key.principal, afterRotation: key.rotatedAt !== null, ...(key.rotatedFrom ? { rotatedFrom: key.rotatedFrom } : {}), ...(key.rotatedTo ? { successorId: key.rotatedTo } : {}) },
        });
      });
    } catch (err) {
      this.logger.warn({ msg: 'could not record the key.used audit entry of a rotated key', keyId: key.id, err });
    }
  }

  async list(tenant: string): Promise<ApiKeyView[]> {
    const rows = await this.ds.getRepository(ApiKeyEntity).find({ where: { tenant }, order: { createdAt: 'ASC' } });
    return rows.map((r) => this.view(r));
  }

  /**
   * A page of the keys of a scope, oldest first (the HTTP list; the CLI lists them all): a tenant's
   * keys, or with a workspace only the keys bound to that workspace (never the tenant-level keys nor
   * those of another workspace).
   */
  async page(scope: TenantScope, q: PageRequest, binding: CursorBinding): Promise<Page<ApiKeyView>> {
    const qb = scopedQuery(this.ds.getRepository(ApiKeyEntity).createQueryBuilder('k'), scope);
    const page = await keysetPage(qb, q, {
      keys: [{ column: 'k.created_at', type: 'timestamptz' }, { column: 'k.id', type: 'uuid' }],
      direction: 'ASC',
      binding,
    });
    return { items: page.items.map((r) => this.view(r)), nextCursor: page.nextCursor };
  }

  /**
   * Revokes a key. With a scope, only a key of that scope: a tenant's key, or with a workspace only a
   * key bound to that workspace; any other answers not found, exactly like an unknown id. The
   * revocation is stamped with the database clock and announced to every replica in the same
   * transaction (KeyRevocationWatcher), so their verification caches drop the key at once.
   */
  async revoke(id: string, scope?: TenantScope | string, actor: KeyActor = SYSTEM_ACTOR): Promise<ApiKeyView> {
    const s: TenantScope | undefined = typeof scope === 'string' ? { tenant: scope } : scope;
    if (!UUID.test(id)) throw new NotFoundError('No such API key.');
    const key = await this.ds.transaction(async (m) => {
      const repo = m.getRepository(ApiKeyEntity);
      const found = await repo.findOne({ where: s ? inScope(s, { id }) : { id } });
      if (!found) throw new NotFoundError('No such API key.');
      if (!found.revokedAt) {
        const [rows] = (await m.query(`UPDATE "api_key" SET "revoked_at" = now() WHERE "id" = $1 AND "revoked_at" IS NULL RETURNING "revoked_at"`, [found.id])) as [Array<{ revoked_at: Date }>, number];
        found.revokedAt = rows[0]?.revoked_at ?? (await repo.findOneByOrFail({ id: found.id })).revokedAt;
        await m.query(`SELECT pg_notify($1, $2)`, [KEY_REVOKED_CHANNEL, found.lookupId]);
        await this.audit.record(m, {
          tenant: found.tenant,
          workspace: found.workspace ?? undefined,
          actor,
          action: 'key.revoked',
          resource: { type: 'api-key', id: found.id },
          details: { keyPrincipal: found.principal },
        });
      }
      return found;
    });
    this.forget(key.lookupId);
    return this.view(key);
  }

  /** Drops one key from this replica's verification cache (it is read again on its next use). */
  forget(lookupId: string): void {
    this.cache.delete(lookupId);
    this.refused.delete(lookupId);
  }

  /** Drops every key from this replica's verification cache. */
  forgetAll(): void {
    this.cache.clear();
    this.refused.clear();
  }

  async count(): Promise<number> {
    return this.ds.getRepository(ApiKeyEntity).count();
  }

  /** Remembers a lookup id no key has (see `refused`). */
  private refuse(lookup: string): void {
    this.refused.delete(lookup);
    if (this.refused.size >= ApiKeyService.REFUSED_MAX) this.refused.delete(this.refused.keys().next().value as string);
    this.refused.set(lookup, Date.now() + this.cacheMs);
  }

  looksLikeApiKey(token: string): boolean {
    return token.startsWith(this.config.apiKeyPrefix);
  }

  /** The principal of a presented key, or a reason it is refused. */
  async verify(token: string): Promise<{ principal?: Principal; refusal?: 'unknown' | 'revoked' | 'expired' }> {
    const m = token.slice(this.config.apiKeyPrefix.length).match(/^([a-z0-9]{12})_([A-Za-z0-9_-]{43})$/);
    if (!m || !this.looksLikeApiKey(token)) return { refusal: 'unknown' };
    const [, lookup, secret] = m;
    let key: ApiKeyEntity | null | undefined;
    const cached = this.cache.get(lookup);
    if (cached && cached.until > Date.now()) key = cached.key;
    else if ((this.refused.get(lookup) ?? 0) > Date.now()) key = null;
    else {
      key = await this.ds.getRepository(ApiKeyEntity).findOne({ where: { lookupId: lookup } });
      if (key) this.cache.set(lookup, { key, until: Date.now() + this.cacheMs });
      else {
        this.cache.delete(lookup);
        this.refuse(lookup);
      }
    }
    const presented = Buffer.from(hash(secret), 'hex');
    const stored = Buffer.from(key?.secretHash ?? hash('x'), 'hex');
    const equal = timingSafeEqual(presented, stored);
    if (!key || !equal) return { refusal: 'unknown' };
    if (key.revokedAt) return { refusal: 'revoked' };
    if (key.expiresAt && key.expiresAt.getTime() <= Date.now()) return { refusal: 'expired' };
    if ((key.rotatedAt || key.rotatedFrom) && !key.rotationUsedAt) await this.noteRotationUse(key);
    return {
      principal: {
        tenant: key.tenant,
        workspace: key.workspace ?? undefined,
        principal: key.principal,
        scopes: new Set([...key.scopes, ...expandRoles(key.roles)]),
        kind: 'api-key',
        keyId: key.id,
      },
    };
  }

  /**
   * What a principal of the caller's tenant is granted now: the scopes (roles expanded) of its API
   * keys that are neither revoked nor expired, tenant-level keys and those of `scope.workspace`.
   * Undefined when it holds none: an unseeded principal, which every decision refuses (RFC 0049 §C).
   */
  async grantsOf(scope: TenantScope, principal: string): Promise<ReadonlySet<string> | undefined> {
    const rows = (await this.ds.query(
      `SELECT "scopes", "roles" FROM "api_key" WHERE "tenant" = $1 AND "principal" = $2 AND "revoked_at" IS NULL
         AND ("expires_at" IS NULL OR "expires_at" > now()) AND ("workspace" IS NULL OR "workspace" = $3)`,
      [scope.tenant, principal, scope.workspace ?? null],
    )) as Array<{ scopes: string[]; roles: string[] }>;
    if (!rows.length) return undefined;
    return new Set(rows.flatMap((r) => [...r.scopes, ...expandRoles(r.roles)]));
  }

  private view(e: ApiKeyEntity): ApiKeyView {
    return {
      id: e.id,
      tenant: e.tenant,
      workspace: e.workspace ?? undefined,
      principal: e.principal,
      name: e.name ?? undefined,
      scopes: e.scopes,
      roles: e.roles,
      prefix: `${this.config.apiKeyPrefix}${e.lookupId}`,
      expiresAt: e.expiresAt?.toISOString(),
      revokedAt: e.revokedAt?.toISOString(),
      createdAt: e.createdAt.toISOString(),
      rotatedAt: e.rotatedAt?.toISOString(),
      rotatedTo: e.rotatedTo ?? undefined,
      rotatedFrom: e.rotatedFrom ?? undefined,
    };
  }
}
