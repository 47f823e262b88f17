import { createHash, randomBytes } from 'node:crypto';
import { Injectable, Logger } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { DomainError, ForbiddenError, NotFoundError, ValidationError } from '../../../platform/errors/domain-error';
import { EventLogService, HOST_STREAM } from '../../../platform/events/event-log.service';
import type { Principal, TenantScope } from '../../../platform/identity/principal';
import { UUID } from '../../../platform/ids';
import { ConnectionChangeNotifier } from '../connection-change-notifier';
import { ConnectionEntity } from '../connections/connection.entity';
import { credentialRefOf } from '../connections/connections.service';
import { CredentialStoreService } from '../credentials/credential-store.service';
import { ConnectionPacksService } from '../packs/connection-packs.service';
import { OAuthAuthorizationEntity, OAuthGrantEntity } from './oauth.entities';
import { OAuthEndpoints, OAuthProviderClient, OAuthProviderError, TokenSet, unsupported } from './oauth-provider-client';

/** The principal key of a grant shared by the whole tenant. */
export const SHARED = '';

export interface GrantView {
  connectionId: string;
  provider: string;
  /** `null` for the tenant's shared grant. */
  principal: string | null;
  credentialRef: string;
  scopes: string[];
  expiresAt: string | null;
  status: string;
}

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');
const b64url = (b: Buffer) => b.toString('base64url');

/**
 * OAuth connections (RFC 0047): the authorization-code grant with PKCE (S256), `state` and `iss` (RFC 9207) checks,
 * tokens sealed in the credential store like any credential, refresh before expiry and after a 401, revocation.
 * A grant belongs to one principal of the tenant (or, when shared, to the tenant): a token is always resolved for the
 * invoking principal first. Token material, codes, verifiers and `state` never reach a response, an event or a log.
 */
@Injectable()
export class OAuthService {
  private readonly logger = new Logger('oauth');

  constructor(
    private readonly ds: DataSource,
    private readonly credentials: CredentialStoreService,
    private readonly packs: ConnectionPacksService,
    private readonly events: EventLogService,
    readonly client: OAuthProviderClient,
    private readonly notifier: ConnectionChangeNotifier,
  ) {}

  private async connection(scope: TenantScope, id: string, m?: EntityManager): Promise<ConnectionEntity> {
    const row = UUID.test(id) ? await (m ?? this.ds.manager).getRepository(ConnectionEntity).findOne({ where: { tenant: scope.tenant, id } }) : null;
    if (!row) throw new NotFoundError('No such connection.');
    return row;
  }

  /** The scopes a provider's connection may request: its scope groups' scopes plus the client's extra scopes. */
  private async plan(scope: TenantScope, providerId: string): Promise<{ endpoints: OAuthEndpoints; allowed: Set<string>; groups: Map<string, string[]>; readDefault: string[] }> {
    if (!this.client.client(providerId)) throw unsupported(providerId);
    const resolved = await this.packs.requireProvider(scope, providerId);
    const endpoints = await this.client.endpoints(providerId, resolved.provider);
    const groups = new Map<string, string[]>();
    const read = resolved.provider.auth.scopes?.read ?? [];
    for (const g of [...read, ...(resolved.provider.auth.scopes?.write ?? [])]) groups.set(g.key, g.scopes);
    const extra = this.client.client(providerId)!.extraScopes ?? [];
    const allowed = new Set([...[...groups.values()].flat(), ...extra]);
    return { endpoints, allowed, groups, readDefault: [...new Set([...read.flatMap((g) => g.scopes), ...extra])] };
  }

  /**
   * Starts an authorization for `p` (or, `shared`, for the tenant): the URL to send the person's browser to.
   * `groups` are consent group keys of the provider, `scopes` raw scopes; neither: the read groups.
   */
  async authorize(p: Principal, connectionId: string, input: { groups?: string[]; scopes?: string[]; shared?: boolean }): Promise<{ authorizationUrl: string; expiresAt: string; scopes: string[] }> {
    if (input.shared && !p.scopes.has('connections:manage')) throw new ForbiddenError('A shared grant needs connections:manage.', { scopeRequired: 'connections:manage' });
    const conn = await this.connection(p, connectionId);
    const { endpoints, allowed, groups, readDefault } = await this.plan(p, conn.providerId);
    const requested = new Set<string>(this.client.client(conn.providerId)!.extraScopes ?? []);
    for (const key of input.groups ?? []) {
      const g = groups.get(key);
      if (!g) throw new DomainError('oauth_scope_unsupported', 422, `Provider "${conn.providerId}" has no consent group "${key}".`, { provider: conn.providerId, group: key });
      g.forEach((s) => requested.add(s));
    }
    for (const s of input.scopes ?? []) {
      if (!allowed.has(s)) throw new DomainError('oauth_scope_unsupported', 422, `Provider "${conn.providerId}" does not declare scope "${s}".`, { provider: conn.providerId, scope: s });
      requested.add(s);
    }
    if (!input.groups?.length && !input.scopes?.length) readDefault.forEach((s) => requested.add(s));
    const scopes = [...requested];
    const state = b64url(randomBytes(32));
    const verifier = b64url(randomBytes(48));
    const expiresAt = new Date(Date.now() + this.client.settings.authorizationTtlSeconds * 1000);
    const redirectUri = this.client.settings.callbackUrl!;
    await this.ds.transaction(async (m) => {
      // Expired authorizations of the tenant go with each new one (their sealed verifiers too).
      const stale = await m.getRepository(OAuthAuthorizationEntity).createQueryBuilder('a').where('a.tenant = :t AND a.expires_at < now()', { t: p.tenant }).getMany();
      for (const a of stale) await this.discard(a, m);
      const verifierCredentialId = await this.credentials.store(p.tenant, verifier, m);
      await m.getRepository(OAuthAuthorizationEntity).insert({ tenant: p.tenant, stateHash: sha256(state), connectionId: conn.id, principal: input.shared ? SHARED : p.principal, shared: !!input.shared, verifierCredentialId, scopes, redirectUri, expiresAt });
    });
    const url = new URL(endpoints.authorize);
    url.searchParams.set('response_type', 'code');
    url.searchParams.set('client_id', this.client.client(conn.providerId)!.clientId);
    url.searchParams.set('redirect_uri', redirectUri);
    if (scopes.length) url.searchParams.set('scope', scopes.join(' '));
    url.searchParams.set('state', state);
    url.searchParams.set('code_challenge', b64url(createHash('sha256').update(verifier).digest()));
    url.searchParams.set('code_challenge_method', 'S256');
    return { authorizationUrl: url.toString(), expiresAt: expiresAt.toISOString(), scopes };
  }

  private async discard(a: OAuthAuthorizationEntity, m: EntityManager): Promise<void> {
    await m.getRepository(OAuthAuthorizationEntity).delete({ id: a.id });
    await this.credentials.delete(a.tenant, a.verifierCredentialId, m);
  }

  /** Consumes the authorization in flight that `state` names (single use, whatever comes next); refused when unknown or expired. */
  async take(state: string): Promise<{ a: OAuthAuthorizationEntity; verifier: string }> {
    const found = await this.ds.transaction(async (m) => {
      const a = await m.getRepository(OAuthAuthorizationEntity).createQueryBuilder('a').where('a.state_hash = :h', { h: sha256(state) }).setLock('pessimistic_write').getOne();
      if (!a) return undefined;
      const verifier = await this.credentials.open(a.tenant, a.verifierCredentialId, m);
      await this.discard(a, m);
      return { a, verifier };
    });
    if (!found || found.a.expiresAt.getTime() < Date.now()) throw new DomainError('oauth_state_invalid', 400, 'The authorization is unknown, already completed or expired: start it again.');
    return found;
  }

  /** Records an authorization in flight for a `state` and PKCE verifier chosen elsewhere (the conformance seam's fixture values). */
  async pending(a: { tenant: string; principal: string; connectionId: string; state: string; verifier: string; scopes: string[]; redirectUri: string }): Promise<void> {
    await this.ds.transaction(async (m) => {
      const verifierCredentialId = await this.credentials.store(a.tenant, a.verifier, m);
      const expiresAt = new Date(Date.now() + this.client.settings.authorizationTtlSeconds * 1000);
      await m.getRepository(OAuthAuthorizationEntity).insert({ tenant: a.tenant, stateHash: sha256(a.state), connectionId: a.connectionId, principal: a.principal, shared: false, verifierCredentialId, scopes: a.scopes, redirectUri: a.redirectUri, expiresAt });
    });
  }

  /** Deletes up to `limit` abandoned authorizations (past their TTL) of any tenant, with their sealed verifiers. */
  async sweepExpired(limit = 500): Promise<number> {
    return this.ds.transaction(async (m) => {
      const rows = await m.getRepository(OAuthAuthorizationEntity).createQueryBuilder('a').where('a.expires_at < now()').setLock('pessimistic_write').setOnLocked('skip_locked').limit(limit).getMany();
      for (const a of rows) await this.discard(a, m);
      return rows.length;
    });
  }

  /** Deletes one grant and its sealed tokens (the seam's cleanup). */
  async forgetGrant(tenant: string, connectionId: string, principal: string): Promise<void> {
    await this.ds.transaction(async (m) => {
      const g = await m.getRepository(OAuthGrantEntity).findOne({ where: { tenant, connectionId, principal } });
      if (!g) return;
      await m.getRepository(OAuthGrantEntity).delete({ id: g.id });
      await this.credentials.delete(tenant, g.credentialId, m);
    });
    this.notifier.changed(tenant);
  }

  /**
   * The provider's redirect back (`GET /v1/oauth/callback`). The `state` is single-use and must match an
   * authorization in flight; `iss`, when the issuer is known, must be it (and must be present when the server
   * advertises it). Then the code is exchanged with the PKCE verifier and the tokens are sealed.
   */
  async callback(q: { state?: string; code?: string; iss?: string; error?: string }): Promise<GrantView> {
    if (!q.state) throw new ValidationError('The callback carries no state.', { code: 'oauth_state_invalid' });
    const { a, verifier } = await this.take(q.state);
    const conn = await this.connection({ tenant: a.tenant }, a.connectionId);
    const { endpoints } = await this.plan({ tenant: a.tenant }, conn.providerId);
    if (endpoints.issuer !== undefined && (q.iss !== undefined || endpoints.issRequired) && q.iss !== endpoints.issuer) {
      throw new DomainError('oauth_issuer_mismatch', 400, 'The authorization response comes from another issuer than the one it was sent to (RFC 9207).');
    }
    if (q.error) throw new DomainError('oauth_authorization_denied', 400, `The provider did not authorize the connection (${String(q.error).slice(0, 64)}).`);
    if (!q.code) throw new ValidationError('The callback carries no code.');
    const { event: _event, ...grant } = await this.complete({ tenant: a.tenant, principal: a.principal, connectionId: conn.id, providerId: conn.providerId, tokenEndpoint: endpoints.token, redirectUri: a.redirectUri, scopes: a.scopes }, q.code, verifier);
    return grant;
  }

  /**
   * The last steps of an authorization, after its state was verified: the code exchanged with the PKCE verifier, the
   * token set sealed (replacing the principal's earlier grant on the connection) and `connector.authorized` appended.
   */
  async complete(
    a: { tenant: string; principal: string; connectionId: string; providerId: string; tokenEndpoint: string; redirectUri: string; scopes: string[] },
    code: string,
    verifier: string,
  ): Promise<GrantView & { event: { type: string; payload: Record<string, unknown> } }> {
    const tokens = await this.client.token(a.providerId, a.tokenEndpoint, { grant_type: 'authorization_code', code, redirect_uri: a.redirectUri, code_verifier: verifier }).catch((e: unknown) => {
      // A refused code is not an expired grant: the authorization failed and must be started again.
      throw e instanceof OAuthProviderError && e.terminal ? new DomainError('oauth_code_rejected', 400, `The provider refused the authorization code (${e.providerError}): start the authorization again.`) : e;
    });
    const scopes = tokens.scope ? tokens.scope.split(' ').filter(Boolean) : a.scopes;
    const view = await this.ds.transaction(async (m) => {
      const repo = m.getRepository(OAuthGrantEntity);
      const existing = await repo.createQueryBuilder('g').where('g.tenant = :t AND g.connection_id = :c AND g.principal = :p', { t: a.tenant, c: a.connectionId, p: a.principal }).setLock('pessimistic_write').getOne();
      let credentialId: string;
      if (existing) {
        credentialId = existing.credentialId;
        await this.credentials.replace(a.tenant, credentialId, JSON.stringify(tokens), m);
        await repo.update({ id: existing.id }, { scopes, expiresAt: tokens.expires_at ? new Date(tokens.expires_at) : null, status: 'active' });
      } else {
        credentialId = await this.credentials.store(a.tenant, JSON.stringify(tokens), m);
        await repo.insert({ tenant: a.tenant, connectionId: a.connectionId, principal: a.principal, credentialId, scopes, expiresAt: tokens.expires_at ? new Date(tokens.expires_at) : null, status: 'active' });
      }
      const payload = { provider: a.providerId, credentialRef: credentialRefOf(credentialId)!, scopes };
      await this.events.append({ tenant: a.tenant }, HOST_STREAM, 'connector.authorized', payload, { manager: m });
      const row = await repo.findOneByOrFail({ tenant: a.tenant, connectionId: a.connectionId, principal: a.principal });
      return { ...toGrantView(row, a.providerId), event: { type: 'connector.authorized', payload } };
    });
    // The connector tools of the tenant follow its usable connections.
    this.notifier.changed(a.tenant);
    return view;
  }

  /** The grants of a connection the caller may see: its own and the shared one. */
  async grants(p: Principal, connectionId: string): Promise<GrantView[]> {
    const conn = await this.connection(p, connectionId);
    const rows = await this.ds.getRepository(OAuthGrantEntity).find({ where: [{ tenant: p.tenant, connectionId: conn.id, principal: p.principal }, { tenant: p.tenant, connectionId: conn.id, principal: SHARED }], order: { principal: 'ASC' } });
    return rows.map((r) => toGrantView(r, conn.providerId));
  }

  /** The grant a call by `principal` uses: its own, else the tenant's shared one. */
  private async grantFor(scope: TenantScope & { principal: string }, connectionId: string, m: EntityManager, lock = false): Promise<OAuthGrantEntity | null> {
    for (const principal of [scope.principal, SHARED]) {
      const qb = m.getRepository(OAuthGrantEntity).createQueryBuilder('g').where('g.tenant = :t AND g.connection_id = :c AND g.principal = :p', { t: scope.tenant, c: connectionId, p: principal });
      if (lock) qb.setLock('pessimistic_write');
      const row = await qb.getOne();
      if (row) return row;
    }
    return null;
  }

  /**
   * Calls `use` with the invoking principal's access token for the connection, refreshing it first when it expires
   * within the skew, and once more after a 401 from the provider. A refresh the provider refuses for good marks the
   * grant expired, appends `connector.auth_expired` and fails with `connector_auth_expired`. Never hand the token on.
   */
  async withAccessToken(scope: TenantScope & { principal: string }, connectionId: string, use: (accessToken: string) => Promise<Response>): Promise<Response> {
    const conn = await this.connection(scope, connectionId);
    const grant = await this.grantFor(scope, conn.id, this.ds.manager);
    if (!grant) throw new DomainError('oauth_grant_missing', 409, 'No OAuth grant for this connection and principal: authorize it first.', { connectionId: conn.id });
    if (grant.status !== 'active') throw expired(conn.providerId, grant);
    const skew = this.client.settings.refreshSkewSeconds * 1000;
    let tokens = JSON.parse(await this.credentials.open(scope.tenant, grant.credentialId)) as TokenSet;
    if (tokens.expires_at !== undefined && tokens.expires_at - skew <= Date.now()) tokens = await this.refresh(scope, conn, grant.principal, tokens.access_token);
    const res = await use(tokens.access_token);
    if (res.status !== 401) return res;
    await res.body?.cancel().catch(() => undefined);
    tokens = await this.refresh(scope, conn, grant.principal, tokens.access_token);
    return use(tokens.access_token);
  }

  /**
   * Refreshes under a row lock, so concurrent callers (and replicas) refresh once: a caller that finds the token
   * already replaced (not the one it saw) uses the new one.
   */
  private async refresh(scope: TenantScope, conn: ConnectionEntity, principal: string, seen: string): Promise<TokenSet> {
    const { endpoints } = await this.plan(scope, conn.providerId);
    const outcome = await this.ds.transaction(async (m) => {
      const grant = await m.getRepository(OAuthGrantEntity).createQueryBuilder('g').where('g.tenant = :t AND g.connection_id = :c AND g.principal = :p', { t: scope.tenant, c: conn.id, p: principal }).setLock('pessimistic_write').getOne();
      if (!grant) throw new DomainError('oauth_grant_missing', 409, 'The OAuth grant was revoked.', { connectionId: conn.id });
      if (grant.status !== 'active') return { error: expired(conn.providerId, grant) };
      const current = JSON.parse(await this.credentials.open(scope.tenant, grant.credentialId, m)) as TokenSet;
      if (current.access_token !== seen) return { tokens: current };
      const fail = async (reason: string) => {
        await m.getRepository(OAuthGrantEntity).update({ id: grant.id }, { status: 'expired' });
        await this.events.append(scope, HOST_STREAM, 'connector.auth_expired', { provider: conn.providerId, credentialRef: credentialRefOf(grant.credentialId), reason }, { manager: m });
        this.logger.warn({ msg: 'oauth grant expired', provider: conn.providerId, connectionId: conn.id, reason });
        return { error: expired(conn.providerId, grant) };
      };
      if (!current.refresh_token) return fail('no_refresh_token');
      try {
        const next = await this.client.token(conn.providerId, endpoints.token, { grant_type: 'refresh_token', refresh_token: current.refresh_token });
        // A provider that does not rotate refresh tokens answers without one: the old one stays valid.
        const merged: TokenSet = { ...next, refresh_token: next.refresh_token ?? current.refresh_token };
        await this.credentials.replace(scope.tenant, grant.credentialId, JSON.stringify(merged), m);
        await m.getRepository(OAuthGrantEntity).update({ id: grant.id }, { expiresAt: merged.expires_at ? new Date(merged.expires_at) : null });
        return { tokens: merged };
      } catch (e) {
        if (e instanceof OAuthProviderError && e.terminal) return fail(e.providerError);
        throw e;
      }
    });
    if (outcome.error) {
      this.notifier.changed(scope.tenant);
      throw outcome.error;
    }
    return outcome.tokens!;
  }

  /**
   * Whether a credential resolves for `principal` (its own grant, else the tenant's shared one) on a connection of
   * `provider` with every scope of `scopes` (RFC 0199 §C.2): `ok` with its reference, else why not (`missing`,
   * `insufficient_scope` when one resolves with fewer scopes, `expired` when its refresh failed for good).
   */
  async credentialStatus(scope: TenantScope & { principal: string }, provider: string, scopes: readonly string[]): Promise<{ status: 'ok' | 'missing' | 'expired' | 'insufficient_scope'; credentialRef?: string }> {
    const conns = await this.ds.getRepository(ConnectionEntity).find({ where: { tenant: scope.tenant, providerId: provider }, order: { name: 'ASC' } });
    let best: { status: 'missing' | 'expired' | 'insufficient_scope'; credentialRef?: string } = { status: 'missing' };
    for (const conn of conns) {
      const grant = await this.grantFor(scope, conn.id, this.ds.manager);
      if (!grant) continue;
      const credentialRef = credentialRefOf(grant.credentialId)!;
      if (grant.status !== 'active') {
        if (best.status === 'missing') best = { status: 'expired', credentialRef };
        continue;
      }
      if (scopes.every((s) => grant.scopes.includes(s))) return { status: 'ok', credentialRef };
      best = { status: 'insufficient_scope', credentialRef };
    }
    return best;
  }

  /**
   * Starts the caller's own grant for `provider` on the tenant's connection of it (the first by name): what a
   * `credential` interrupt's connect URL does once the host has checked the caller is the run's starter.
   */
  async connect(p: Principal, provider: string, scopes: readonly string[]): Promise<{ authorizationUrl: string; expiresAt: string; scopes: string[] }> {
    const conn = await this.ds.getRepository(ConnectionEntity).findOne({ where: { tenant: p.tenant, providerId: provider }, order: { name: 'ASC' } });
    if (!conn) throw new DomainError('connection_not_found', 404, `The tenant has no connection of provider "${provider}": an operator creates one first (POST /v1/connections).`, { provider });
    return this.authorize(p, conn.id, { scopes: [...scopes] });
  }

  /** Revokes the caller's grant (or the shared one) at the provider (RFC 7009, when it has an endpoint) and deletes it. */
  async revoke(p: Principal, connectionId: string, shared: boolean): Promise<{ revokedAtProvider: boolean }> {
    if (shared && !p.scopes.has('connections:manage')) throw new ForbiddenError('A shared grant needs connections:manage.', { scopeRequired: 'connections:manage' });
    const conn = await this.connection(p, connectionId);
    const principal = shared ? SHARED : p.principal;
    const grant = await this.ds.getRepository(OAuthGrantEntity).findOne({ where: { tenant: p.tenant, connectionId: conn.id, principal } });
    if (!grant) throw new NotFoundError('No OAuth grant to revoke.');
    const tokens = JSON.parse(await this.credentials.open(p.tenant, grant.credentialId)) as TokenSet;
    let revokedAtProvider = false;
    const endpoints = await this.plan(p, conn.providerId).then((x) => x.endpoints).catch(() => undefined);
    if (endpoints?.revoke) {
      if (tokens.refresh_token) revokedAtProvider = await this.client.revoke(conn.providerId, endpoints.revoke, tokens.refresh_token, 'refresh_token');
      revokedAtProvider = (await this.client.revoke(conn.providerId, endpoints.revoke, tokens.access_token, 'access_token')) || revokedAtProvider;
    }
    await this.ds.transaction(async (m) => {
      await m.getRepository(OAuthGrantEntity).delete({ id: grant.id });
      await this.credentials.delete(p.tenant, grant.credentialId, m);
      await this.events.append(p, HOST_STREAM, 'connection.oauth_revoked', { connectionId: conn.id, provider: conn.providerId, credentialRef: credentialRefOf(grant.credentialId), revokedAtProvider }, { manager: m });
    });
    this.notifier.changed(p.tenant);
    return { revokedAtProvider };
  }

  /** Deletes every grant of a deleted connection (and its sealed tokens), in the caller's transaction. */
  async forgetConnection(tenant: string, connectionId: string, m: EntityManager): Promise<void> {
    const rows = await m.getRepository(OAuthGrantEntity).find({ where: { tenant, connectionId } });
    for (const g of rows) {
      await m.getRepository(OAuthGrantEntity).delete({ id: g.id });
      await this.credentials.delete(tenant, g.credentialId, m);
    }
  }
}

function expired(provider: string, grant: OAuthGrantEntity): DomainError {
  return new DomainError('connector_auth_expired', 409, `The OAuth grant of provider "${provider}" expired and could not be refreshed: authorize the connection again.`, { provider, credentialRef: credentialRefOf(grant.credentialId) });
}

function toGrantView(g: OAuthGrantEntity, provider: string): GrantView {
  return { connectionId: g.connectionId, provider, principal: g.principal === SHARED ? null : g.principal, credentialRef: credentialRefOf(g.credentialId)!, scopes: g.scopes, expiresAt: g.expiresAt?.toISOString() ?? null, status: g.status };
}
