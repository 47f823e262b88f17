import { Inject, Injectable } from '@nestjs/common';
import { AUDIT_PROFILE } from '../audit/audit.advertiser';
import { AuditLogService } from '../audit/audit-log.service';
import { HOST_CONFIG, HostConfig } from '../config/host-config';
import { subjectLinkKeyClass } from '../config/saml-settings';
import { Advertiser, CapabilityAdvertiser } from '../discovery/capability-advertiser';

export const KEY_ROTATION_PROFILE = 'openwop-auth-api-key-rotation';
export const OIDC_USER_BEARER_PROFILE = 'openwop-auth-oidc-user-bearer';
export const OAUTH2_CLIENT_CREDENTIALS_PROFILE = 'openwop-auth-oauth2-client-credentials';
export const SAML_PROFILE = 'openwop-auth-saml';
export const SCIM_PROFILE = 'openwop-auth-scim';

/**
 * `auth.profiles` (auth-profiles.md), in one place: the discovery document merges advertisers deeply
 * but replaces arrays, so the profiles list has one author. It names
 *
 * - `openwop-audit-log-integrity` while the audit log's signing key can be read (the same condition
 *   under which AuditAdvertiser advertises `auth.auditLogIntegrity`);
 * - `openwop-auth-api-key-rotation` with `auth.rotation {supported, minGraceSeconds}`: `POST
 *   /v1/keys/{id}/rotate` mints a successor bound to the same tenant, workspace and principal, both
 *   keys authenticate during the overlap, the old one is refused after it (401, as an expired key),
 *   and `key.created`, `key.rotated`, `key.used` and `key.revoked` are audited. Every rotation's
 *   overlap is at least OPENWOP_KEY_ROTATION_MIN_OVERLAP_S, the advertised minimum grace;
 * - `openwop-auth-oidc-user-bearer` with `auth.oidc` and `openwop-auth-oauth2-client-credentials` with
 *   `auth.oauth2`, each only while its lane is configured (token-lanes.ts);
 * - `openwop-auth-saml` while SAML providers are configured (saml/) and `openwop-auth-scim` while a
 *   tenant is provisioned over SCIM (scim/). With both, the lanes are linked (RFC 0164, derived, never
 *   opted out): `auth.subjectLinking: true` and `auth.subjectLinkKey` — `opaque-idp` (persistent
 *   NameID) or `configured-immutable` (an attribute a provider's settings declare immutable).
 */
@Injectable()
@Advertiser()
export class AuthProfilesAdvertiser implements CapabilityAdvertiser {
  constructor(
    private readonly audit: AuditLogService,
    @Inject(HOST_CONFIG) private readonly config: HostConfig,
  ) {}

  async advertise(): Promise<Record<string, unknown>> {
    const auditSigned = await this.audit.publicKeySpki().then(() => true, () => false);
    const { oidc, oauth2, saml, scimTokens } = this.config.identity ?? {};
    const scim = (scimTokens?.size ?? 0) > 0;
    return {
      auth: {
        profiles: [
          ...(auditSigned ? [AUDIT_PROFILE] : []),
          KEY_ROTATION_PROFILE,
          ...(oidc ? [OIDC_USER_BEARER_PROFILE] : []),
          ...(oauth2 ? [OAUTH2_CLIENT_CREDENTIALS_PROFILE] : []),
          ...(saml ? [SAML_PROFILE] : []),
          ...(scim ? [SCIM_PROFILE] : []),
        ],
        ...(saml && scim ? { subjectLinking: true, subjectLinkKey: subjectLinkKeyClass(saml) } : {}),
        rotation: { supported: true, minGraceSeconds: this.config.keyRotation.minOverlapS },
        ...(oidc ? { oidc: { supported: true, issuers: oidc.issuers, audience: oidc.audience, supportedScopeMapping: 'group-claim' } } : {}),
        ...(oauth2 ? { oauth2: { supported: true, issuer: oauth2.issuers[0], audience: oauth2.audience, supportedAlgorithms: oauth2.algorithms } } : {}),
      },
    };
  }
}
