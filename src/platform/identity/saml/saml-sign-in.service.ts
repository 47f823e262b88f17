import { Inject, Injectable, Logger } from '@nestjs/common';
import type { CacheProvider, SAML } from '@node-saml/node-saml';
import { DataSource, LessThan } from 'typeorm';
import { AuditLogService } from '../../audit/audit-log.service';
import { HOST_CONFIG, HostConfig } from '../../config/host-config';
import type { SamlIdpSettings, SamlSettings } from '../../config/saml-settings';
import { NotFoundError } from '../../errors/domain-error';
import { IDENTIFIER, Principal } from '../principal';
import { ScimDirectory } from '../scim/scim-directory.service';
import { expandRoles } from '../scopes';
import { SamlMessageEntity } from './saml-message.entity';

export const PERSISTENT_NAME_ID = 'urn:oasis:names:tc:SAML:2.0:nameid-format:persistent';
/** How long an AuthnRequest waits for its response. */
const REQUEST_TTL_MS = 600_000;
/** Clock skew allowed on NotBefore / NotOnOrAfter between the identity provider and this host. */
const CLOCK_SKEW_MS = 60_000;

/** Why a SAML response did not sign anyone in (the seam reports it; people see one message). */
export type SamlRefusal =
  | 'signature'
  | 'expired'
  | 'audience'
  | 'in-response-to'
  | 'issuer'
  | 'destination'
  | 'replayed'
  | 'link-key'
  | 'unprovisioned'
  | 'cross-idp'
  | 'deprovisioned'
  | 'no-role'
  | 'invalid';

export type SamlOutcome =
  | { authenticated: true; idp: SamlIdpSettings; principal: Principal; linked: boolean }
  | { authenticated: false; idp: SamlIdpSettings; reason: SamlRefusal; linkedDenied: boolean };

const SAML_ACTOR = { principal: 'saml', kind: 'system' } as const;

/**
 * SAML 2.0 sign-in (profile `openwop-auth-saml`), SP-initiated with the HTTP-POST binding: the host
 * sends an AuthnRequest to a provider its settings trust for a tenant and validates the response with
 * node-saml against that provider's certificate — signed assertion (exactly one), audience = the
 * host's SP entityID, NotBefore/NotOnOrAfter, InResponseTo naming an unused request of this provider,
 * issuer = its entityID, Destination and Recipient = the ACS URL, the assertion id never seen before.
 *
 * Subject linking (RFC 0159/0163/0164): the subject is the persistent NameID (or the attribute the
 * operator declared immutable), never an email. In a tenant with SCIM, sign-in needs the SCIM user
 * provisioned with that subject as `externalId` BY THE SAME provider (`link_idp`): a user another
 * provider fed never links (no cross-IdP collision joins two principals), a deactivated or deleted
 * user is denied. Without SCIM the principal is `<provider id>:<subject>`. The one writer of
 * saml_message.
 */
@Injectable()
export class SamlSignIn {
  private readonly log = new Logger('SamlSignIn');
  private readonly clients = new Map<string, SAML>();

  constructor(
    private readonly ds: DataSource,
    private readonly scim: ScimDirectory,
    private readonly audit: AuditLogService,
    @Inject(HOST_CONFIG) private readonly config: HostConfig,
  ) {}

  get settings(): SamlSettings | undefined {
    return this.config.identity?.saml;
  }

  /** A provider by its id, optionally only within a tenant (unknown and foreign both 404). */
  idp(id: string, tenant?: string): SamlIdpSettings {
    const p = this.settings?.idps.find((i) => i.id === id && (tenant === undefined || i.tenant === tenant));
    if (!p) throw new NotFoundError('No such SAML identity provider.');
    return p;
  }

  idpsOf(tenant: string): SamlIdpSettings[] {
    return this.settings?.idps.filter((i) => i.tenant === tenant) ?? [];
  }

  /** The host's SP metadata (entityID, ACS with the HTTP-POST binding, signed assertions wanted), for the providers' administrators. */
  metadata(): string {
    const first = this.settings!.idps[0];
    return this.client(first).generateServiceProviderMetadata(null, null);
  }

  /** Starts a sign-in: the provider's SSO URL carrying a deflated, one-time AuthnRequest (HTTP-Redirect binding) and RelayState = the provider id. */
  async begin(idp: SamlIdpSettings): Promise<string> {
    await this.ds.getRepository(SamlMessageEntity).delete({ expiresAt: LessThan(new Date()) });
    return this.client(idp).getAuthorizeUrlAsync(idp.id, undefined, {});
  }

  /** Validates a response posted to the ACS for a provider and resolves the linked principal. */
  async complete(idp: SamlIdpSettings, samlResponse: string): Promise<SamlOutcome> {
    const outcome = await this.validate(idp, samlResponse);
    await this.ds.transaction((m) =>
      this.audit.record(m, {
        tenant: idp.tenant,
        actor: SAML_ACTOR,
        action: outcome.authenticated ? 'auth.saml.signed-in' : 'auth.saml.refused',
        resource: { type: 'saml-idp', id: idp.id },
        details: outcome.authenticated ? { principal: outcome.principal.principal, linked: outcome.linked } : { reason: outcome.reason, linkedDenied: outcome.linkedDenied },
      }),
    );
    if (!outcome.authenticated) this.log.log({ msg: 'SAML sign-in refused', tenant: idp.tenant, idp: idp.id, reason: outcome.reason });
    return outcome;
  }

  private async validate(idp: SamlIdpSettings, samlResponse: string): Promise<SamlOutcome> {
    const s = this.settings!;
    const refuse = (reason: SamlRefusal, linkedDenied = false): SamlOutcome => ({ authenticated: false, idp, reason, linkedDenied });
    if (typeof samlResponse !== 'string' || !samlResponse || samlResponse.length > 1_000_000) return refuse('invalid');
    let profile: Record<string, unknown> & { nameID?: string; nameIDFormat?: string; issuer?: string; getAssertionXml?: () => string; getSamlResponseXml?: () => string };
    try {
      const res = await this.client(idp).validatePostResponseAsync({ SAMLResponse: samlResponse });
      if (!res.profile) return refuse('invalid');
      profile = res.profile as typeof profile;
    } catch (e) {
      return refuse(refusalOf((e as Error).message));
    }
    const assertionXml = profile.getAssertionXml?.() ?? '';
    if (profile.issuer !== idp.entityId) return refuse('issuer');
    const recipient = /<(?:[\w-]+:)?SubjectConfirmationData\b[^>]*\bRecipient="([^"]*)"/.exec(assertionXml)?.[1];
    const destination = /^\s*(?:<\?xml[^>]*>\s*)?<(?:[\w-]+:)?Response\b[^>]*\bDestination="([^"]*)"/.exec(profile.getSamlResponseXml?.() ?? '')?.[1];
    if (recipient !== s.acsUrl || (destination !== undefined && destination !== s.acsUrl)) return refuse('destination');
    const assertionId = /^\s*<(?:[\w-]+:)?Assertion\b[^>]*\bID="([^"]+)"/.exec(assertionXml)?.[1];
    if (!assertionId) return refuse('invalid');
    const notOnOrAfter = /<(?:[\w-]+:)?Conditions\b[^>]*\bNotOnOrAfter="([^"]+)"/.exec(assertionXml)?.[1];
    const until = Math.max(Date.parse(notOnOrAfter ?? '') || 0, Date.now()) + CLOCK_SKEW_MS;
    // One use per assertion id, across replicas: the insert is the check.
    const fresh = await this.ds.query(`INSERT INTO "saml_message" ("id", "kind", "idp", "expires_at") VALUES ($1, 'assertion', $2, $3) ON CONFLICT ("id") DO NOTHING RETURNING "id"`, [
      `assertion:${idp.id}:${assertionId}`.slice(0, 1024),
      idp.id,
      new Date(until),
    ]);
    if (!fresh.length) return refuse('replayed');
    const subject = this.subjectOf(idp, profile);
    if (!subject) return refuse('link-key');
    const groups = attributeList(profile[idp.groupsAttribute]);
    let principal: string;
    let linked = false;
    if (this.scim.enabledFor(idp.tenant)) {
      const link = await this.scim.linkOf(idp.tenant, idp.id, subject);
      if (link.state === 'none') return refuse(link.otherRoot ? 'cross-idp' : 'unprovisioned');
      if (link.state === 'deprovisioned') return refuse('deprovisioned', true);
      principal = link.principal;
      groups.push(...link.groups);
      linked = true;
    } else {
      principal = `${idp.id}:${subject}`;
      if (!IDENTIFIER.test(principal)) return refuse('link-key');
    }
    const roles = new Set<string>();
    for (const g of groups) if (Object.prototype.hasOwnProperty.call(idp.groupRoles, g)) for (const r of idp.groupRoles[g]) roles.add(r);
    const scopes = expandRoles([...roles]);
    if (!scopes.length) return refuse('no-role');
    return { authenticated: true, idp, linked, principal: { tenant: idp.tenant, principal, scopes: new Set(scopes), kind: 'jwt', idp: { lane: 'session', issuer: idp.entityId } } };
  }

  /** The link key of an assertion: the persistent NameID, or the provider's declared immutable attribute. Anything else (an email NameID) links nothing. */
  private subjectOf(idp: SamlIdpSettings, profile: Record<string, unknown> & { nameID?: string; nameIDFormat?: string }): string | undefined {
    const v = idp.linkAttribute !== undefined ? profile[idp.linkAttribute] : profile.nameIDFormat === PERSISTENT_NAME_ID ? profile.nameID : undefined;
    return typeof v === 'string' && v.length > 0 && v.length <= 256 ? v : undefined;
  }

  private client(idp: SamlIdpSettings): SAML {
    let c = this.clients.get(idp.id);
    if (c) return c;
    const s = this.settings!;
    // node-saml (and its XML stack) loads with the first provider's client: a host without SAML never loads it.
    const { SAML, ValidateInResponseTo } = require('@node-saml/node-saml') as typeof import('@node-saml/node-saml');
    c = new SAML({
      issuer: s.spEntityId,
      callbackUrl: s.acsUrl,
      entryPoint: idp.ssoUrl,
      idpCert: idp.certificates,
      idpIssuer: idp.entityId,
      audience: s.spEntityId,
      wantAssertionsSigned: true,
      wantAuthnResponseSigned: false,
      signatureAlgorithm: 'sha256',
      identifierFormat: idp.linkAttribute !== undefined ? null : PERSISTENT_NAME_ID,
      acceptedClockSkewMs: CLOCK_SKEW_MS,
      validateInResponseTo: ValidateInResponseTo.always,
      requestIdExpirationPeriodMs: REQUEST_TTL_MS,
      cacheProvider: this.requestCache(idp.id),
      disableRequestedAuthnContext: true,
    });
    this.clients.set(idp.id, c);
    return c;
  }

  /** The AuthnRequest ids of one provider awaiting their response, in the database (any replica may receive the response). */
  private requestCache(idp: string): CacheProvider {
    const repo = () => this.ds.getRepository(SamlMessageEntity);
    const key = (id: string) => `request:${idp}:${id}`.slice(0, 1024);
    return {
      saveAsync: async (id, value) => {
        await repo().insert({ id: key(id), kind: 'request', idp, value, expiresAt: new Date(Date.now() + REQUEST_TTL_MS) });
        return { value, createdAt: Date.now() };
      },
      getAsync: async (id) => {
        const row = await repo().findOneBy({ id: key(id), kind: 'request' });
        return row && row.expiresAt.getTime() > Date.now() ? row.value : null;
      },
      removeAsync: async (id) => {
        if (id === null) return null;
        const res = await repo().delete({ id: key(id), kind: 'request' });
        return res.affected ? id : null;
      },
    };
  }
}

function refusalOf(message: string): SamlRefusal {
  if (/signature/i.test(message)) return 'signature';
  if (/expired|NotBefore|NotOnOrAfter|not yet valid|subject confirmation/i.test(message)) return 'expired';
  if (/audience/i.test(message)) return 'audience';
  if (/InResponseTo/i.test(message)) return 'in-response-to';
  if (/issuer/i.test(message)) return 'issuer';
  return 'invalid';
}

function attributeList(v: unknown): string[] {
  if (Array.isArray(v)) return v.filter((s): s is string => typeof s === 'string');
  return typeof v === 'string' ? [v] : [];
}
