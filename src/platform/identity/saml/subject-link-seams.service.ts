import { Injectable } from '@nestjs/common';
import type { SamlIdpSettings } from '../../config/saml-settings';
import { DomainError, NotFoundError, ValidationError } from '../../errors/domain-error';
import { IDENTIFIER, Principal } from '../principal';
import { ScimDirectory } from '../scim/scim-directory.service';
import { ScimError } from '../scim/scim-wire';
import { SamlSignIn } from './saml-sign-in.service';

const FETCH_TIMEOUT_MS = 10_000;
/** Link keys the host never links on: mutable or personal (RFC 0159 §A.2, RFC 0163 §A.3). */
const MUTABLE_LINK_KEYS = /^(e-?mail|emails|mail|username|user_name|displayname|upn|userprincipalname|name|login)$/i;

/**
 * What the subject-linking seams do (saml-seams.controller.ts). `validate` drives the real sign-in:
 * the host's AuthnRequest goes to the provider's SSO URL with the synthetic provider's two inputs (the
 * subject and the variant, standing in for the person at its login page); the HTML form it answers is
 * read like a browser would and its SAMLResponse goes through the ACS validation (SamlSignIn.complete).
 * `provision` acts as the tenant's identity provider on its SCIM directory (ScimDirectory, the same
 * writer as /scim/v2): the directory keeps userNames unique, so a second person provisioned under a
 * userName another externalId holds gets `<userName>.<externalId>`.
 */
@Injectable()
export class SubjectLinkSeams {
  constructor(
    private readonly saml: SamlSignIn,
    private readonly scim: ScimDirectory,
  ) {}

  async validate(p: Principal, body: { idpUrl: string; variant: string; nameId: string; groups?: string[] }): Promise<Record<string, unknown>> {
    const idp = this.providerAt(p.tenant, body.idpUrl);
    const url = new URL(await this.saml.begin(idp));
    url.searchParams.set('nameId', body.nameId);
    url.searchParams.set('variant', body.variant);
    if (body.groups) url.searchParams.set('groups', body.groups.join(','));
    let html: string;
    let status: number;
    try {
      const res = await fetch(url, { redirect: 'manual', signal: AbortSignal.timeout(FETCH_TIMEOUT_MS) });
      status = res.status;
      html = await res.text();
    } catch (e) {
      throw new DomainError('upstream_unavailable', 503, `The identity provider ${idp.id} did not answer the sign-in: ${(e as Error).message}.`);
    }
    if (status !== 200) throw new DomainError('upstream_unavailable', 503, `The identity provider ${idp.id} answered the sign-in with ${status}.`);
    const response = formValue(html, 'SAMLResponse');
    if (!response || formValue(html, 'RelayState') !== idp.id) throw new DomainError('upstream_unavailable', 503, `The identity provider ${idp.id} answered no SAML response form.`);
    const outcome = await this.saml.complete(idp, response);
    return outcome.authenticated
      ? { authenticated: true, tenant: idp.tenant, idp: idp.id, principal: outcome.principal.principal, linked: outcome.linked, scopes: [...outcome.principal.scopes].sort(), linkedDenied: false }
      : { authenticated: false, tenant: idp.tenant, idp: idp.id, reason: outcome.reason, linkedDenied: outcome.linkedDenied };
  }

  async provision(
    p: Principal,
    body: { scimUrl: string; op: 'create-user' | 'deactivate-user' | 'link'; externalId?: string; userName?: string; idpUrl?: string; linkKey?: string; email?: string },
  ): Promise<{ status: number; body: Record<string, unknown> }> {
    let base: URL | undefined;
    try {
      base = new URL(body.scimUrl);
    } catch {
      base = undefined;
    }
    if (!base || !/\/scim\/v2\/?$/.test(base.pathname)) throw new ValidationError('`scimUrl` must be the SCIM 2.0 base URL of this host (…/scim/v2).', { field: 'scimUrl' });
    if (!this.scim.enabledFor(p.tenant)) throw new NotFoundError('This tenant\'s directory is not provisioned over SCIM.');
    const root = this.scim.linkRoot(p.tenant);
    if (body.op === 'link') {
      const key = body.linkKey ?? (body.email !== undefined ? 'email' : undefined);
      if (key === undefined || MUTABLE_LINK_KEYS.test(key)) {
        throw new ValidationError(`Subjects are never linked on ${key === undefined ? 'an unnamed key' : `"${key}"`}: a mutable or personal attribute. They link on the identity provider's opaque subject, the externalId a user is provisioned with.`, { field: 'linkKey', linkKey: key ?? null, allowed: ['externalId'] });
      }
      throw new ValidationError('A link forms when a user is provisioned (`create-user` with its `externalId`); there is nothing to link separately.', { field: 'op' });
    }
    if (body.email !== undefined && body.externalId === undefined) {
      throw new ValidationError('Users are addressed by their externalId (the identity provider\'s opaque subject), never by email.', { field: 'email' });
    }
    if (typeof body.externalId !== 'string' || !IDENTIFIER.test(body.externalId)) throw new ValidationError('`externalId` is required: 1-128 letters, digits and ._:@-.', { field: 'externalId' });
    if (body.idpUrl !== undefined) {
      const idp = this.providerAt(p.tenant, body.idpUrl);
      if (idp.id !== root) throw new ValidationError(`The directory of this tenant is fed by ${root ? `the identity provider "${root}"` : 'no SAML identity provider'}, not "${idp.id}".`, { field: 'idpUrl' });
    }
    const existing = (await this.scim.listUsers(p.tenant, { attr: 'externalId', value: body.externalId }, 1, 10)).rows.filter((u) => u.linkIdp === root);
    if (body.op === 'deactivate-user') {
      const u = existing[0];
      if (!u) throw new NotFoundError(`No user with externalId ${body.externalId}.`);
      const after = await this.scim.patchUser(p.tenant, u.id, [{ op: 'replace', path: 'active', value: false }]);
      return { status: 200, body: { op: body.op, user: view(after) } };
    }
    if (existing[0]) return { status: 200, body: { op: body.op, user: view(existing[0]), existed: true } };
    const wanted = body.userName ?? body.externalId;
    if (!IDENTIFIER.test(wanted)) throw new ValidationError('`userName` must be 1-128 letters, digits and ._:@-.', { field: 'userName' });
    const held = (await this.scim.listUsers(p.tenant, { attr: 'userName', value: wanted }, 1, 1)).total > 0;
    const userName = held ? `${wanted}.${body.externalId}`.slice(0, 128) : wanted;
    try {
      const u = await this.scim.createUser(p.tenant, { userName, externalId: body.externalId, active: true });
      return { status: 201, body: { op: body.op, user: view(u) } };
    } catch (e) {
      if (e instanceof ScimError) throw new DomainError(e.status === 409 ? 'conflict' : 'validation_error', e.status, e.detail);
      throw e;
    }
  }

  /** The provider of a tenant whose SSO URL the given URL is (a prefix of). */
  private providerAt(tenant: string, idpUrl: string): SamlIdpSettings {
    const want = idpUrl.replace(/\/+$/, '');
    const idp = this.saml.idpsOf(tenant).find((i) => i.ssoUrl === want || i.ssoUrl.startsWith(`${want}/`));
    if (!idp) throw new ValidationError('`idpUrl` names no SAML identity provider this tenant trusts.', { field: 'idpUrl' });
    return idp;
  }
}

function view(u: { id: string; userName: string; externalId: string | null; active: boolean; linkIdp: string | null }): Record<string, unknown> {
  return { id: u.id, userName: u.userName, externalId: u.externalId, active: u.active, linkIdp: u.linkIdp };
}

/** The value of a hidden form input (an auto-posting HTTP-POST binding page). */
function formValue(html: string, name: string): string | undefined {
  const tag = new RegExp(`<input\\b[^>]*\\bname="${name}"[^>]*>`, 'i').exec(html)?.[0];
  const v = tag ? /\bvalue="([^"]*)"/i.exec(tag)?.[1] : undefined;
  return v?.replace(/&quot;/g, '"').replace(/&#x2F;/gi, '/').replace(/&#43;/g, '+').replace(/&#x3D;/gi, '=').replace(/&amp;/g, '&');
}
