import { readFileSync } from 'node:fs';
import { ConfigError } from './config-error';
import { envInt } from './env-int';
import type { EnvSetting } from './env-setting';

/**
 * SAML 2.0 sign-in (profile `openwop-auth-saml`): the identity providers each tenant trusts, from a
 * JSON settings file, and the host's own service-provider identity. Off while OPENWOP_SAML_IDPS_FILE
 * is unset.
 */
export interface SamlIdpSettings {
  /** The host's name for the provider (RelayState, the `idp` of the login URL, the trust root SCIM users are linked under). */
  id: string;
  tenant: string;
  /** The provider's entityID: a response or assertion issued by anyone else is refused. */
  entityId: string;
  /** Its single sign-on endpoint (HTTP-Redirect binding for the AuthnRequest). */
  ssoUrl: string;
  /** PEM certificate(s) whose keys sign its assertions (two during a key rollover). */
  certificates: string[];
  /**
   * The link key: unset, the persistent NameID (class `opaque-idp`); set, the name of an attribute the
   * operator declares immutable (class `configured-immutable`). Never an email or a user name.
   */
  linkAttribute?: string;
  /** The attribute carrying the user's groups. */
  groupsAttribute: string;
  /** group → host roles, for this provider's users (with the SCIM groups of the linked user). */
  groupRoles: Record<string, string[]>;
  /** This provider feeds the tenant's SCIM directory: users provisioned over SCIM link to its subjects (one per tenant). */
  scim: boolean;
}

export interface SamlSettings {
  /** The host's SP entityID: the audience every assertion must name. */
  spEntityId: string;
  /** The assertion consumer service URL: the Destination and Recipient every response must name. */
  acsUrl: string;
  idps: SamlIdpSettings[];
  sessionTtlS: number;
}

export const SAML_ENV_SETTINGS: EnvSetting[] = [
  { name: 'OPENWOP_SAML_IDPS_FILE', description: 'SAML 2.0 sign-in (profile `openwop-auth-saml`): path of a JSON file `{"idps": [{"id", "tenant", "entityId", "ssoUrl", "certificate" | "certificateFile", "linkAttribute"?, "groupsAttribute"?, "groupRoles"?, "scim"?}]}` naming the identity providers each tenant trusts (docs/security.md, SAML sign-in). Unset (the default): SAML is off.' },
  { name: 'OPENWOP_SAML_SP_ENTITY_ID', description: 'The host\'s SAML service-provider entityID, the audience every assertion must name (required with OPENWOP_SAML_IDPS_FILE).' },
  { name: 'OPENWOP_SAML_ACS_URL', description: 'The assertion consumer service, `https://<host>/console/auth/saml/acs`: the Destination and Recipient every SAML response must name (required with OPENWOP_SAML_IDPS_FILE).' },
];

const ID = /^[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}$/;
const ROLES = new Set(['viewer', 'editor', 'admin']);
/** Mutable or personal attributes: a link on any of them would let a renamed or re-assigned address take over a principal (RFC 0159 §A.2). */
const MUTABLE_KEYS = /^(e-?mail|mail|emailaddress|upn|userprincipalname|username|user_name|uid|name|displayname|givenname|surname|sn|cn|login|preferred_username)$/i;
const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]']);

function str(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const v = env[name];
  return v === undefined || v.trim() === '' ? undefined : v.trim();
}

function url(where: string, raw: unknown, path?: RegExp): string {
  if (typeof raw !== 'string') throw new ConfigError(`${where} must be a URL`);
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new ConfigError(`${where}: "${raw}" is not a URL`);
  }
  if (u.protocol !== 'https:' && !(u.protocol === 'http:' && LOOPBACK.has(u.hostname))) throw new ConfigError(`${where}: "${raw}" must be https (http only on loopback)`);
  if (path && !path.test(u.pathname)) throw new ConfigError(`${where}: "${raw}" must end in ${path.source.replace(/[\\$]/g, '')}`);
  return raw;
}

function certificates(where: string, e: Record<string, unknown>): string[] {
  const raw = e.certificate ?? (typeof e.certificateFile === 'string' ? readCert(where, e.certificateFile) : undefined);
  const list = Array.isArray(raw) ? raw : [raw];
  if (!list.length || !list.every((c) => typeof c === 'string' && /-----BEGIN CERTIFICATE-----[\s\S]+-----END CERTIFICATE-----/.test(c))) {
    throw new ConfigError(`${where}: "certificate" (PEM, or a list of them) or "certificateFile" is required`);
  }
  return list as string[];
}

function readCert(where: string, file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (e) {
    throw new ConfigError(`${where}: cannot read certificateFile ${file}: ${(e as Error).message}`);
  }
}

function roles(where: string, raw: unknown): Record<string, string[]> {
  if (raw === undefined) return {};
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) throw new ConfigError(`${where}.groupRoles must be an object of group → role(s)`);
  const out: Record<string, string[]> = Object.create(null);
  for (const [group, r] of Object.entries(raw as Record<string, unknown>)) {
    const list = typeof r === 'string' ? [r] : r;
    if (!Array.isArray(list) || !list.every((x) => typeof x === 'string' && ROLES.has(x))) throw new ConfigError(`${where}.groupRoles["${group}"] must be viewer, editor, admin or a list of them`);
    out[group] = list as string[];
  }
  return out;
}

function idp(raw: unknown, i: number): SamlIdpSettings {
  const where = `OPENWOP_SAML_IDPS_FILE idps[${i}]`;
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) throw new ConfigError(`${where} must be an object`);
  const e = raw as Record<string, unknown>;
  for (const k of ['id', 'tenant']) if (typeof e[k] !== 'string' || !ID.test(e[k] as string)) throw new ConfigError(`${where}.${k} is required (1-128 letters, digits and ._:@-)`);
  if (typeof e.entityId !== 'string' || !e.entityId.trim() || e.entityId.length > 1024) throw new ConfigError(`${where}.entityId is required`);
  if (e.linkAttribute !== undefined && (typeof e.linkAttribute !== 'string' || !e.linkAttribute.trim())) throw new ConfigError(`${where}.linkAttribute must be an attribute name`);
  const linkAttribute = e.linkAttribute as string | undefined;
  if (linkAttribute !== undefined && MUTABLE_KEYS.test(linkAttribute.replace(/^.*[/:#]/, ''))) {
    throw new ConfigError(`${where}.linkAttribute "${linkAttribute}" is a mutable or personal attribute; subjects link on the persistent NameID or an immutable identifier (an employee or object id)`);
  }
  if (e.groupsAttribute !== undefined && typeof e.groupsAttribute !== 'string') throw new ConfigError(`${where}.groupsAttribute must be an attribute name`);
  if (e.scim !== undefined && typeof e.scim !== 'boolean') throw new ConfigError(`${where}.scim must be true or false`);
  return {
    id: e.id as string,
    tenant: e.tenant as string,
    entityId: e.entityId,
    ssoUrl: url(`${where}.ssoUrl`, e.ssoUrl),
    certificates: certificates(where, e),
    ...(linkAttribute !== undefined ? { linkAttribute } : {}),
    groupsAttribute: (e.groupsAttribute as string | undefined) ?? 'groups',
    groupRoles: roles(where, e.groupRoles),
    scim: e.scim === true,
  };
}

export function loadSamlSettings(env: NodeJS.ProcessEnv): SamlSettings | undefined {
  const file = str(env, 'OPENWOP_SAML_IDPS_FILE');
  if (!file) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch (e) {
    throw new ConfigError(`OPENWOP_SAML_IDPS_FILE: cannot read ${file} as JSON: ${(e as Error).message}`);
  }
  const list = (parsed as { idps?: unknown } | null)?.idps;
  if (!Array.isArray(list) || !list.length) throw new ConfigError('OPENWOP_SAML_IDPS_FILE must hold {"idps": [ ... ]} with at least one provider');
  const idps = list.map(idp);
  const seen = new Set<string>();
  const feeders = new Set<string>();
  for (const p of idps) {
    if (seen.has(p.id)) throw new ConfigError(`OPENWOP_SAML_IDPS_FILE: two providers are named "${p.id}"`);
    seen.add(p.id);
    if (p.scim && feeders.has(p.tenant)) throw new ConfigError(`OPENWOP_SAML_IDPS_FILE: tenant "${p.tenant}" has two providers marked "scim"; one identity provider feeds a tenant's directory`);
    if (p.scim) feeders.add(p.tenant);
  }
  const spEntityId = str(env, 'OPENWOP_SAML_SP_ENTITY_ID');
  if (!spEntityId) throw new ConfigError('OPENWOP_SAML_IDPS_FILE needs OPENWOP_SAML_SP_ENTITY_ID (assertions for any audience are never accepted)');
  const acsUrl = url('OPENWOP_SAML_ACS_URL', str(env, 'OPENWOP_SAML_ACS_URL'), /\/console\/auth\/saml\/acs$/);
  return { spEntityId, acsUrl, idps, sessionTtlS: envInt(env, 'OPENWOP_CONSOLE_SESSION_TTL_S', 28800, 300, 604800) };
}

/** The link-key class the host advertises (`auth.subjectLinkKey`, RFC 0163): `configured-immutable` once any provider links on an attribute. */
export function subjectLinkKeyClass(s: SamlSettings): 'opaque-idp' | 'configured-immutable' {
  return s.idps.some((p) => p.linkAttribute !== undefined) ? 'configured-immutable' : 'opaque-idp';
}
