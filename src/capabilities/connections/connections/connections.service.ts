import { Inject, Injectable, OnModuleInit } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { AuditLogService, auditActor } from '../../../platform/audit/audit-log.service';
import { HOST_CONFIG, HostConfig } from '../../../platform/config/host-config';
import { PeriodicTaskService } from '../../../platform/scheduler/periodic-task.service';
import { connectionsSettings } from '../connections.settings';
import { ConflictError, DomainError, NotFoundError, ValidationError } from '../../../platform/errors/domain-error';
import { EventLogService, HOST_STREAM } from '../../../platform/events/event-log.service';
import { requireTenantLevel } from '../../../platform/identity/principal';
import type { Principal, TenantScope } from '../../../platform/identity/principal';
import { keysetPage } from '../../../platform/pagination/keyset';
import type { Page, PageRequest } from '../../../platform/pagination/page-query';
import { ConnectionChangeNotifier } from '../connection-change-notifier';
import { CredentialStoreService, MAX_CREDENTIAL_BYTES } from '../credentials/credential-store.service';
import { ConnectionPacksService } from '../packs/connection-packs.service';
import { ConnectionEntity } from './connection.entity';
import { UUID } from '../../../platform/ids';
import { OAuthProviderClient, unsupported } from '../oauth/oauth-provider-client';

/** What anyone outside the credential store sees of a connection: never credential material. */
export interface ConnectionView {
  id: string;
  name: string;
  provider: string;
  /** Opaque reference agents and tools use (`cred:<id>`); null when no credential is bound. */
  credentialRef: string | null;
  /** False for a connection imported without its credential: bind one with PUT .../credential. */
  credentialBound: boolean;
  /** A two-key-overlap rotation in progress: until then the replaced credential is still offered. Null: none. */
  previousCredentialExpiresAt: string | null;
  origin: string;
  createdBy: string;
  createdAt: string;
  updatedAt: string;
}

/** The request pipe's messages for an absent `credential` (kept for hosts without OAuth connections). */
const MISSING_CREDENTIAL = [`credential must be shorter than or equal to ${MAX_CREDENTIAL_BYTES} characters`, 'credential must be longer than or equal to 1 characters', 'credential must be a string'];

export function credentialRefOf(credentialId: string | null): string | null {
  return credentialId ? `cred:${credentialId}` : null;
}

export function toConnectionView(e: ConnectionEntity): ConnectionView {
  return {
    id: e.id,
    name: e.name,
    provider: e.providerId,
    credentialRef: credentialRefOf(e.credentialId),
    credentialBound: !!e.credentialId,
    previousCredentialExpiresAt: inOverlap(e) ? e.previousCredentialExpiresAt!.toISOString() : null,
    origin: e.origin,
    createdBy: e.createdBy,
    createdAt: e.createdAt.toISOString(),
    updatedAt: e.updatedAt.toISOString(),
  };
}

/** Whether the credential the last rotation replaced is still offered (its overlap has not ended). */
function inOverlap(e: ConnectionEntity): boolean {
  return !!e.previousCredentialId && !!e.previousCredentialExpiresAt && e.previousCredentialExpiresAt.getTime() > Date.now();
}

/**
 * Thrown by a `withCredential` callback when the provider refused the credential it was handed (401 or
 * 403 from the provider): during a two-key-overlap rotation the call is then made once more with the
 * credential the rotation replaced. Carries no credential material.
 */
export class CredentialRejectedError extends DomainError {
  constructor(message = 'The provider refused the credential.') {
    super('credential_rejected', 502, message);
  }
}

/**
 * Tenant connections (RFC 0046): a provider plus a credential held encrypted in the credential
 * store. A connection belongs to the tenant and is shared by all its workspaces: every credential of
 * the tenant may read it (never its credential), and only a tenant-level credential may create,
 * rotate or delete one. The credential is write-only: created and rotated here, never read back through any view.
 * Exported for other capabilities, which read connections of a scope by reference only.
 */
@Injectable()
export class ConnectionsService implements OnModuleInit {
  constructor(
    private readonly ds: DataSource,
    private readonly credentials: CredentialStoreService,
    private readonly packs: ConnectionPacksService,
    private readonly events: EventLogService,
    private readonly notifier: ConnectionChangeNotifier,
    private readonly oauth: OAuthProviderClient,
    private readonly audit: AuditLogService,
    private readonly tasks: PeriodicTaskService,
    @Inject(HOST_CONFIG) private readonly config: HostConfig,
  ) {}

  onModuleInit(): void {
    // Rotated-out credentials whose overlap ended are deleted from the store, once per slot across replicas.
    this.tasks.register({
      name: 'connections.credential-overlap-retire',
      intervalMs: 60_000,
      run: async (signal) => {
        while (!signal.aborted && (await this.retireExpiredOverlaps(100)) === 100);
      },
    });
  }

  async create(p: Principal, input: { provider: string; name: string; credential?: string }): Promise<ConnectionView> {
    requireTenantLevel(p, 'Connections');
    // A host without OAuth clients answers a missing credential exactly as before OAuth connections existed.
    if (input.credential === undefined && !this.oauth.enabled()) throw new ValidationError('The request is malformed.', { fields: MISSING_CREDENTIAL });
    const resolved = await this.packs.requireProvider(p, input.provider);
    // Without a credential, a connection is an OAuth connection (RFC 0047): the host must hold a client for the provider.
    if (input.credential === undefined && (resolved.provider.auth.kind !== 'oauth2' || !this.oauth.client(resolved.providerId))) throw unsupported(resolved.providerId);
    const view = await this.ds.transaction(async (m) => {
      const credentialId = input.credential === undefined ? null : await this.credentials.store(p.tenant, input.credential, m);
      const inserted = (await m.query(
        `INSERT INTO "connection" ("tenant", "name", "provider_id", "credential_id", "origin", "created_by") VALUES ($1, $2, $3, $4, 'api', $5)
         ON CONFLICT ("tenant", "name") DO NOTHING RETURNING "id"`,
        [p.tenant, input.name, resolved.providerId, credentialId, p.principal],
      )) as Array<{ id: string }>;
      if (!inserted.length) throw new ConflictError('connection_exists', `A connection named "${input.name}" already exists.`, { name: input.name });
      const row = await m.getRepository(ConnectionEntity).findOneByOrFail({ id: inserted[0].id });
      await this.events.append(p, HOST_STREAM, 'connection.created', { connectionId: row.id, name: row.name, provider: row.providerId, credentialRef: credentialRefOf(credentialId) }, { manager: m });
      return toConnectionView(row);
    });
    this.notifier.changed(p.tenant);
    return view;
  }

  async list(scope: TenantScope, manager?: EntityManager): Promise<ConnectionView[]> {
    const rows = await (manager ?? this.ds.manager).getRepository(ConnectionEntity).find({ where: { tenant: scope.tenant }, order: { name: 'ASC' } });
    return rows.map(toConnectionView);
  }

  /** A page of the tenant's connections, by name. */
  async page(scope: TenantScope, q: PageRequest): Promise<Page<ConnectionView>> {
    const qb = this.ds.getRepository(ConnectionEntity).createQueryBuilder('c').where('c.tenant = :t', { t: scope.tenant });
    const page = await keysetPage(qb, q, {
      keys: [{ column: 'c.name', type: 'text' }, { column: 'c.id', type: 'uuid' }],
      direction: 'ASC',
      binding: { list: 'connections', tenant: scope.tenant, workspace: scope.workspace },
    });
    return { items: page.items.map(toConnectionView), nextCursor: page.nextCursor };
  }

  /** Whether any tenant has a usable connection: a credential bound, or an active OAuth grant (what the connector source projects from). */
  async anyUsable(): Promise<boolean> {
    const rows = (await this.ds.query(`SELECT 1 FROM "connection" WHERE "credential_id" IS NOT NULL UNION ALL SELECT 1 FROM "oauth_grant" WHERE "status" = 'active' LIMIT 1`)) as unknown[];
    return rows.length > 0;
  }

  /** The provider ids of the tenant's usable connections: a credential bound, or an active OAuth grant of some principal (RFC 0047). */
  async usableProviders(scope: TenantScope): Promise<string[]> {
    const rows = (await this.ds.query(
      `SELECT DISTINCT c."provider_id" AS p FROM "connection" c WHERE c."tenant" = $1 AND (c."credential_id" IS NOT NULL
         OR EXISTS (SELECT 1 FROM "oauth_grant" g WHERE g."tenant" = c."tenant" AND g."connection_id" = c."id" AND g."status" = 'active')) ORDER BY 1`,
      [scope.tenant],
    )) as Array<{ p: string }>;
    return rows.map((r) => r.p);
  }

  /** 404 for an unknown id, a malformed id and another tenant's id alike. */
  async get(scope: TenantScope, id: string, manager?: EntityManager): Promise<ConnectionView> {
    return toConnectionView(await this.row(scope, id, manager));
  }

  async findByName(scope: TenantScope, name: string, manager?: EntityManager): Promise<ConnectionView | undefined> {
    const row = await (manager ?? this.ds.manager).getRepository(ConnectionEntity).findOne({ where: { tenant: scope.tenant, name } });
    return row ? toConnectionView(row) : undefined;
  }

  private async row(scope: TenantScope, id: string, manager?: EntityManager, lock = false): Promise<ConnectionEntity> {
    if (!UUID.test(id)) throw new NotFoundError('No such connection.');
    const qb = (manager ?? this.ds.manager).getRepository(ConnectionEntity).createQueryBuilder('c').where('c.tenant = :t AND c.id = :id', { t: scope.tenant, id });
    if (lock) qb.setLock('pessimistic_write');
    const row = await qb.getOne();
    if (!row) throw new NotFoundError('No such connection.');
    return row;
  }

  async delete(p: Principal, id: string): Promise<void> {
    requireTenantLevel(p, 'Connections');
    await this.ds.transaction(async (m) => {
      const row = await this.row(p, id, m, true);
      await m.getRepository(ConnectionEntity).delete({ tenant: p.tenant, id: row.id });
      if (row.credentialId) await this.credentials.delete(p.tenant, row.credentialId, m);
      if (row.previousCredentialId) await this.credentials.delete(p.tenant, row.previousCredentialId, m);
      // Its OAuth grants (RFC 0047) and their sealed tokens go with it; authorizations in flight fail at the callback.
      const grants = (await m.query(`DELETE FROM "oauth_grant" WHERE "tenant" = $1 AND "connection_id" = $2 RETURNING "credential_id"`, [p.tenant, row.id])) as [Array<{ credential_id: string }>, number];
      for (const g of grants[0]) await this.credentials.delete(p.tenant, g.credential_id, m);
      await this.events.append(p, HOST_STREAM, 'connection.deleted', { connectionId: row.id, name: row.name, provider: row.providerId }, { manager: m });
    });
    this.notifier.changed(p.tenant);
  }

  /**
   * Rotates (or, for an imported connection, binds) the credential. The reference stays the same, so
   * agents and tools keep working. Two-key overlap (RFC 0046 §D): with `overlapSeconds` > 0 (default
   * connections.credentialOverlapSeconds) the replaced material stays sealed in the store and is still
   * offered until the overlap ends (when the provider refuses the new one, see withCredential), then the
   * sweep deletes it; 0 overwrites it in the same transaction. A rotation during an overlap retires the
   * credential that was already on its way out.
   */
  async rotateCredential(p: Principal, id: string, credential: string, overlapSeconds?: number): Promise<ConnectionView> {
    requireTenantLevel(p, 'Connections');
    const overlap = overlapSeconds ?? connectionsSettings(this.config).credentialOverlapSeconds;
    const view = await this.ds.transaction(async (m) => {
      const row = await this.row(p, id, m, true);
      let credentialId = row.credentialId;
      let previousId: string | null = null;
      let expires: Date | null = null;
      if (row.previousCredentialId) await this.credentials.delete(p.tenant, row.previousCredentialId, m);
      if (credentialId) {
        if (overlap > 0) {
          // The replaced material moves to a credential of its own (sealed under its own id), so the reference stays.
          previousId = await this.credentials.store(p.tenant, await this.credentials.open(p.tenant, credentialId, m), m);
          const [{ now }] = (await m.query(`SELECT now() AS "now"`)) as Array<{ now: Date }>;
          expires = new Date(now.getTime() + overlap * 1000);
        }
        await this.credentials.replace(p.tenant, credentialId, credential, m);
      } else {
        credentialId = await this.credentials.store(p.tenant, credential, m);
      }
      await m.getRepository(ConnectionEntity).update({ tenant: p.tenant, id: row.id }, { credentialId, previousCredentialId: previousId, previousCredentialExpiresAt: expires });
      // Touch the row so updatedAt tells when the credential last changed.
      await m.query(`UPDATE "connection" SET "updated_at" = now() WHERE "tenant" = $1 AND "id" = $2`, [p.tenant, row.id]);
      const rotated = !!row.credentialId;
      await this.events.append(
        p,
        HOST_STREAM,
        rotated ? 'connection.credential_rotated' : 'connection.credential_bound',
        { connectionId: row.id, provider: row.providerId, credentialRef: credentialRefOf(credentialId), ...(rotated ? { overlapSeconds: previousId ? overlap : 0, previousCredentialExpiresAt: expires?.toISOString() ?? null } : {}) },
        { manager: m },
      );
      if (rotated) {
        await this.audit.record(m, {
          tenant: p.tenant, workspace: p.workspace, actor: auditActor(p), action: 'connection.credential-rotated', resource: { type: 'connection', id: row.id },
          details: { provider: row.providerId, overlapSeconds: previousId ? overlap : 0, overlapEndsAt: expires?.toISOString() ?? null },
        });
      }
      return toConnectionView(await m.getRepository(ConnectionEntity).findOneByOrFail({ id: row.id }));
    });
    this.notifier.changed(p.tenant);
    return view;
  }

  /** Ends a two-key-overlap rotation now: the replaced credential is deleted. 404 when none is in its overlap. */
  async retirePreviousCredential(p: Principal, id: string): Promise<ConnectionView> {
    requireTenantLevel(p, 'Connections');
    return this.ds.transaction(async (m) => {
      const row = await this.row(p, id, m, true);
      if (!row.previousCredentialId || !inOverlap(row)) throw new NotFoundError('The connection has no rotated-out credential in its overlap.');
      await this.dropPrevious(m, row, 'revoked', p);
      return toConnectionView(await m.getRepository(ConnectionEntity).findOneByOrFail({ id: row.id }));
    });
  }

  /** Deletes up to `limit` rotated-out credentials whose overlap has ended (every minute, see onModuleInit). */
  async retireExpiredOverlaps(limit = 100): Promise<number> {
    return this.ds.transaction(async (m) => {
      const rows = await m
        .getRepository(ConnectionEntity)
        .createQueryBuilder('c')
        .where('c.previous_credential_id IS NOT NULL AND c.previous_credential_expires_at <= now()')
        .setLock('pessimistic_write')
        .setOnLocked('skip_locked')
        .limit(limit)
        .getMany();
      for (const row of rows) await this.dropPrevious(m, row, 'expired');
      return rows.length;
    });
  }

  private async dropPrevious(m: EntityManager, row: ConnectionEntity, reason: 'expired' | 'revoked', by?: Principal): Promise<void> {
    await m.getRepository(ConnectionEntity).update({ tenant: row.tenant, id: row.id }, { previousCredentialId: null, previousCredentialExpiresAt: null });
    await this.credentials.delete(row.tenant, row.previousCredentialId!, m);
    await this.events.append({ tenant: row.tenant }, HOST_STREAM, 'connection.credential_retired', { connectionId: row.id, provider: row.providerId, reason }, { manager: m });
    await this.audit.record(m, {
      tenant: row.tenant, workspace: by?.workspace, actor: by ? auditActor(by) : { principal: 'host', kind: 'system' }, action: 'connection.credential-retired',
      resource: { type: 'connection', id: row.id }, details: { provider: row.providerId, reason },
    });
  }

  /**
   * Hands the plaintext credential of a connection to `use`, for a request to `requestHost`, after
   * the provider's egress check (RFC 0120: exact or dot-anchored apiHosts match; fails closed). The
   * only way credential plaintext leaves the store. Refused: 403 `egress_host_not_allowed`.
   */
  async withCredential<T>(scope: TenantScope, connectionId: string, requestHost: string, use: (credential: string) => Promise<T>): Promise<T> {
    const row = await this.row(scope, connectionId);
    const decision = await this.packs.egressCheck(scope, row.providerId, requestHost);
    if (!decision.allowed) {
      throw new DomainError('egress_host_not_allowed', 403, `A credential of provider "${row.providerId}" may not be sent to that host.`, { provider: row.providerId, code: decision.code });
    }
    if (!row.credentialId) throw new DomainError('credential_not_found', 404, 'The connection has no credential bound.', { connectionId });
    try {
      return await use(await this.credentials.open(scope.tenant, row.credentialId));
    } catch (e) {
      // Two-key overlap (RFC 0046 §D): the provider may not accept the new credential yet; the replaced one
      // is offered once, only while its overlap lasts.
      if (!(e instanceof CredentialRejectedError)) throw e;
      const replaced = await this.withReplacedCredential(scope, connectionId, requestHost, async (c) => ({ value: await use(c) }));
      if (!replaced) throw e;
      return replaced.value;
    }
  }

  /**
   * `use` with the credential the last rotation replaced, while its overlap lasts (re-read: a retirement may have
   * ended it meanwhile), after the same egress check as withCredential; undefined when there is none.
   */
  async withReplacedCredential<T>(scope: TenantScope, connectionId: string, requestHost: string, use: (credential: string) => Promise<T>): Promise<T | undefined> {
    const row = await this.row(scope, connectionId);
    if (!row.previousCredentialId || !inOverlap(row)) return undefined;
    const decision = await this.packs.egressCheck(scope, row.providerId, requestHost);
    if (!decision.allowed) {
      throw new DomainError('egress_host_not_allowed', 403, `A credential of provider "${row.providerId}" may not be sent to that host.`, { provider: row.providerId, code: decision.code });
    }
    return use(await this.credentials.open(scope.tenant, row.previousCredentialId));
  }

  /**
   * Imports a connection reference (portability): re-owned to `p`, WITHOUT a credential, keyed on
   * (tenant, name). Returns whether it was created and whether it needs a credential bound.
   */
  async importReference(p: Principal | { tenant: string; principal: string }, input: { name: string; provider: string }, m: EntityManager): Promise<{ created: boolean; id: string; needsRebind: boolean }> {
    const inserted = (await m.query(
      `INSERT INTO "connection" ("tenant", "name", "provider_id", "credential_id", "origin", "created_by") VALUES ($1, $2, $3, NULL, 'import', $4)
       ON CONFLICT ("tenant", "name") DO NOTHING RETURNING "id"`,
      [p.tenant, input.name, input.provider, p.principal],
    )) as Array<{ id: string }>;
    if (inserted.length) {
      await this.events.append({ tenant: p.tenant }, HOST_STREAM, 'connection.created', { connectionId: inserted[0].id, name: input.name, provider: input.provider, credentialRef: null }, { manager: m });
      this.notifier.changed(p.tenant);
      return { created: true, id: inserted[0].id, needsRebind: true };
    }
    const existing = await m.getRepository(ConnectionEntity).findOneOrFail({ where: { tenant: p.tenant, name: input.name } });
    return { created: false, id: existing.id, needsRebind: !existing.credentialId };
  }
}
