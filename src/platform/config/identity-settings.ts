import { ConfigError } from './config-error';
import { envInt } from './env-int';
import type { EnvSetting } from './env-setting';
import { loadSamlSettings, SAML_ENV_SETTINGS, SamlSettings } from './saml-settings';

/**
 * Bearer tokens from identity providers (spec v1 auth-profiles.md): the OIDC user-bearer lane (people's
 * ID/access tokens from trusted issuers, groups mapped to host roles per tenant) and the OAuth2
 * client-credentials lane (machine clients' JWT access tokens, scopes from the `scope` claim), plus
 * SCIM 2.0 provisioning. All off by default; each lane is on when its issuer is configured.
 */
export interface TokenLaneSettings {
  kind: 'oidc' | 'oauth2';
  /** Exact issuer identifiers (`iss`); discovery at `<issuer>/.well-known/openid-configuration`. */
  issuers: string[];
  audience: string;
  algorithms: string[];
  claims: { tenant: string; workspace: string; principal: string; groups: string; scopes: string };
  /** Tenant of tokens that carry no tenant claim (an IdP dedicated to one tenant); unset: such tokens are refused (403). */
  defaultTenant?: string;
  /** tenant (or `*`) → group → host roles. OIDC lane only. */
  groupRoles: Record<string, Record<string, string[]>>;
}

export interface IdentitySettings {
  oidc?: TokenLaneSettings;
  oauth2?: TokenLaneSettings;
  /** SCIM bearer tokens per tenant (token → tenant); empty: SCIM off. */
  scimTokens: Map<string, string>;
  /** Console single sign-on (authorization code + PKCE); needs the OIDC lane. */
  console?: ConsoleSignInSettings;
  /** SAML 2.0 sign-in (saml-settings): the identity providers each tenant trusts. */
  saml?: SamlSettings;
}

export interface ConsoleSignInSettings {
  issuer: string;
  clientId: string;
  clientSecret?: string;
  redirectUrl: string;
  scopes: string;
  sessionTtlS: number;
}

export const IDENTITY_ENV_SETTINGS: EnvSetting[] = [
  { name: 'OPENWOP_OIDC_ISSUERS', description: 'OIDC user-bearer lane (profile `openwop-auth-oidc-user-bearer`): comma-separated issuer identifiers the host trusts, exactly as their tokens\' `iss` (https, or http on loopback only). Keys come from each issuer\'s discovery document (`/.well-known/openid-configuration` → `jwks_uri`), fetched when first needed and cached. Unset (the default): the lane is off.' },
  { name: 'OPENWOP_OIDC_AUDIENCE', description: 'Required `aud` of OIDC user tokens (required with OPENWOP_OIDC_ISSUERS; advertised as `auth.oidc.audience`).' },
  { name: 'OPENWOP_OIDC_ALGORITHMS', default: 'RS256,ES256', description: 'Signature algorithms accepted on the OIDC lane (RS256, RS384, RS512, PS256, ES256, ES384, EdDSA); `none` and HMAC are never accepted.' },
  { name: 'OPENWOP_OIDC_CLAIM_TENANT', default: 'tenant', description: 'OIDC claim naming the tenant; without it the token belongs to OPENWOP_OIDC_DEFAULT_TENANT.' },
  { name: 'OPENWOP_OIDC_DEFAULT_TENANT', description: 'Tenant of OIDC tokens without a tenant claim (an issuer dedicated to one tenant). Unset: such tokens are refused (403).' },
  { name: 'OPENWOP_OIDC_CLAIM_WORKSPACE', default: 'workspace', description: 'OIDC claim naming the optional workspace.' },
  { name: 'OPENWOP_OIDC_CLAIM_PRINCIPAL', default: 'sub', description: 'OIDC claim naming the principal (the SCIM `userName`/`externalId` a provisioned user links on).' },
  { name: 'OPENWOP_OIDC_CLAIM_GROUPS', default: 'groups', description: 'OIDC claim holding the user\'s groups (array or space-separated string; Entra: `groups` or `roles`).' },
  { name: 'OPENWOP_OIDC_GROUP_ROLES', description: 'Groups → host roles per tenant, JSON `{"<tenant>|*": {"<group>": "<role>" | ["<role>", ...]}}` (roles: viewer, editor, admin). A token whose groups map to no role is refused with 403 (fail closed). Advertised as `auth.oidc.supportedScopeMapping: "group-claim"`.' },
  { name: 'OPENWOP_OAUTH2_ISSUER', description: 'OAuth2 client-credentials lane (profile `openwop-auth-oauth2-client-credentials`): the issuer of machine clients\' JWT access tokens (discovery and JWKS as for OIDC). Unset (the default): the lane is off.' },
  { name: 'OPENWOP_OAUTH2_AUDIENCE', description: 'Required `aud` of client-credentials tokens (required with OPENWOP_OAUTH2_ISSUER; the resource indicator the client asks for).' },
  { name: 'OPENWOP_OAUTH2_ALGORITHMS', default: 'RS256,ES256', description: 'Signature algorithms accepted on the client-credentials lane (advertised as `auth.oauth2.supportedAlgorithms`).' },
  { name: 'OPENWOP_OAUTH2_CLAIM_TENANT', default: 'tenant', description: 'Client-credentials claim naming the tenant; without it the token belongs to OPENWOP_OAUTH2_DEFAULT_TENANT.' },
  { name: 'OPENWOP_OAUTH2_DEFAULT_TENANT', description: 'Tenant of client-credentials tokens without a tenant claim. Unset: such tokens are refused (403).' },
  { name: 'OPENWOP_OAUTH2_CLAIM_PRINCIPAL', default: 'client_id', description: 'Client-credentials claim naming the principal (falls back to `sub`). Scopes come from the `scope` claim; only host scopes count.' },
  { name: 'OPENWOP_CONSOLE_OIDC_CLIENT_ID', description: 'Console single sign-on: the client id the host signs people in with (authorization code + PKCE) at the OIDC issuer; needs OPENWOP_OIDC_ISSUERS (groups map to roles as for bearer tokens). Unset (the default): the console signs in with a pasted credential only.' },
  { name: 'OPENWOP_CONSOLE_OIDC_CLIENT_SECRET', description: 'The console client\'s secret (confidential client, `client_secret_basic`); unset: a public client (PKCE only).' },
  { name: 'OPENWOP_CONSOLE_OIDC_ISSUER', description: 'The issuer the console signs in at (one of OPENWOP_OIDC_ISSUERS; default: the first).' },
  { name: 'OPENWOP_CONSOLE_OIDC_REDIRECT_URL', description: 'The callback registered at the identity provider: `https://<host>/console/auth/callback` (required with OPENWOP_CONSOLE_OIDC_CLIENT_ID).' },
  { name: 'OPENWOP_CONSOLE_OIDC_SCOPES', default: 'openid profile email groups', description: 'Scopes the console asks for at sign-in (`openid` required).' },
  { name: 'OPENWOP_CONSOLE_SESSION_TTL_S', default: '28800', description: 'Lifetime of a console sign-in session (kept server-side; the browser holds an HttpOnly cookie naming it), in seconds (300 to 604800).' },
  { name: 'OPENWOP_SCIM_TOKENS', description: 'SCIM 2.0 provisioning (`/scim/v2/Users`, `/scim/v2/Groups`): comma-separated `<tenant>=<bearer token>` pairs (tokens at least 32 characters), one per tenant the IdP provisions. Unset (the default): SCIM answers 404.' },
  ...SAML_ENV_SETTINGS,
];

const ALGORITHMS = new Set(['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA']);
const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]']);

function str(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const v = env[name];
  return v === undefined || v.trim() === '' ? undefined : v.trim();
}

function issuerUrl(name: string, raw: string): string {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new ConfigError(`${name}: "${raw}" is not a URL`);
  }
  if (u.protocol !== 'https:' && !(u.protocol === 'http:' && LOOPBACK.has(u.hostname))) {
    throw new ConfigError(`${name}: issuer "${raw}" must be https (http only on loopback)`);
  }
  if (u.search || u.hash) throw new ConfigError(`${name}: issuer "${raw}" must have no query or fragment`);
  return raw;
}

function algorithms(env: NodeJS.ProcessEnv, name: string): string[] {
  const list = (str(env, name) ?? 'RS256,ES256').split(',').map((a) => a.trim()).filter(Boolean);
  for (const a of list) if (!ALGORITHMS.has(a)) throw new ConfigError(`${name}: unsupported algorithm "${a}" (asymmetric algorithms only)`);
  if (!list.length) throw new ConfigError(`${name} names no algorithm`);
  return list;
}

function groupRoles(raw: string | undefined): Record<string, Record<string, string[]>> {
  if (raw === undefined) return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new ConfigError('OPENWOP_OIDC_GROUP_ROLES must be JSON: {"<tenant>|*": {"<group>": ["<role>"]}}');
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new ConfigError('OPENWOP_OIDC_GROUP_ROLES must be a JSON object keyed by tenant (or *)');
  const out: Record<string, Record<string, string[]>> = Object.create(null);
  for (const [tenant, groups] of Object.entries(parsed as Record<string, unknown>)) {
    if (!groups || typeof groups !== 'object' || Array.isArray(groups)) throw new ConfigError(`OPENWOP_OIDC_GROUP_ROLES["${tenant}"] must be an object of group → roles`);
    const map: Record<string, string[]> = Object.create(null);
    for (const [group, roles] of Object.entries(groups as Record<string, unknown>)) {
      const list = typeof roles === 'string' ? [roles] : roles;
      if (!Array.isArray(list) || !list.every((r) => typeof r === 'string')) throw new ConfigError(`OPENWOP_OIDC_GROUP_ROLES["${tenant}"]["${group}"] must be a role name or a list of them`);
      map[group] = list as string[];
    }
    out[tenant] = map;
  }
  return out;
}

function lane(env: NodeJS.ProcessEnv, kind: 'oidc' | 'oauth2'): TokenLaneSettings | undefined {
  const P = kind === 'oidc' ? 'OPENWOP_OIDC' : 'OPENWOP_OAUTH2';
  const issuersName = kind === 'oidc' ? 'OPENWOP_OIDC_ISSUERS' : 'OPENWOP_OAUTH2_ISSUER';
  const rawIssuers = str(env, issuersName);
  if (!rawIssuers) return undefined;
  const issuers = (kind === 'oidc' ? rawIssuers.split(',') : [rawIssuers]).map((s) => s.trim()).filter(Boolean).map((s) => issuerUrl(issuersName, s));
  const audience = str(env, `${P}_AUDIENCE`);
  if (!audience) throw new ConfigError(`${issuersName} needs ${P}_AUDIENCE (tokens for any audience are never accepted)`);
  return {
    kind,
    issuers,
    audience,
    algorithms: algorithms(env, `${P}_ALGORITHMS`),
    claims: {
      tenant: str(env, `${P}_CLAIM_TENANT`) ?? 'tenant',
      workspace: str(env, `${P}_CLAIM_WORKSPACE`) ?? 'workspace',
      principal: str(env, `${P}_CLAIM_PRINCIPAL`) ?? (kind === 'oidc' ? 'sub' : 'client_id'),
      groups: str(env, `${P}_CLAIM_GROUPS`) ?? 'groups',
      scopes: 'scope',
    },
    ...(str(env, `${P}_DEFAULT_TENANT`) ? { defaultTenant: str(env, `${P}_DEFAULT_TENANT`) } : {}),
    groupRoles: kind === 'oidc' ? groupRoles(str(env, 'OPENWOP_OIDC_GROUP_ROLES')) : {},
  };
}

function scimTokens(raw: string | undefined): Map<string, string> {
  const out = new Map<string, string>();
  if (!raw) return out;
  for (const pair of raw.split(',').map((s) => s.trim()).filter(Boolean)) {
    const i = pair.indexOf('=');
    const tenant = i > 0 ? pair.slice(0, i) : '';
    const token = i > 0 ? pair.slice(i + 1) : '';
    if (!/^[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}$/.test(tenant)) throw new ConfigError('OPENWOP_SCIM_TOKENS: each entry must be <tenant>=<token>');
    if (token.length < 32) throw new ConfigError(`OPENWOP_SCIM_TOKENS: the token of tenant "${tenant}" must be at least 32 characters`);
    out.set(token, tenant);
  }
  return out;
}

function consoleSignIn(env: NodeJS.ProcessEnv, oidc: TokenLaneSettings | undefined): ConsoleSignInSettings | undefined {
  const clientId = str(env, 'OPENWOP_CONSOLE_OIDC_CLIENT_ID');
  if (!clientId) return undefined;
  if (!oidc) throw new ConfigError('OPENWOP_CONSOLE_OIDC_CLIENT_ID needs the OIDC lane (OPENWOP_OIDC_ISSUERS, OPENWOP_OIDC_AUDIENCE)');
  const issuer = str(env, 'OPENWOP_CONSOLE_OIDC_ISSUER') ?? oidc.issuers[0];
  if (!oidc.issuers.includes(issuer)) throw new ConfigError('OPENWOP_CONSOLE_OIDC_ISSUER must be one of OPENWOP_OIDC_ISSUERS');
  const redirectUrl = str(env, 'OPENWOP_CONSOLE_OIDC_REDIRECT_URL');
  if (!redirectUrl || !/^https?:\/\/[^/]+\/console\/auth\/callback$/.test(redirectUrl)) {
    throw new ConfigError('OPENWOP_CONSOLE_OIDC_REDIRECT_URL must be https://<host>/console/auth/callback');
  }
  const scopes = str(env, 'OPENWOP_CONSOLE_OIDC_SCOPES') ?? 'openid profile email groups';
  if (!scopes.split(/\s+/).includes('openid')) throw new ConfigError('OPENWOP_CONSOLE_OIDC_SCOPES must include openid');
  const secret = str(env, 'OPENWOP_CONSOLE_OIDC_CLIENT_SECRET');
  return { issuer, clientId, ...(secret ? { clientSecret: secret } : {}), redirectUrl, scopes, sessionTtlS: envInt(env, 'OPENWOP_CONSOLE_SESSION_TTL_S', 28800, 300, 604800) };
}

export function loadIdentitySettings(env: NodeJS.ProcessEnv): IdentitySettings {
  const oidc = lane(env, 'oidc');
  const oauth2 = lane(env, 'oauth2');
  const console = consoleSignIn(env, oidc);
  const saml = loadSamlSettings(env);
  return { ...(oidc ? { oidc } : {}), ...(oauth2 ? { oauth2 } : {}), scimTokens: scimTokens(str(env, 'OPENWOP_SCIM_TOKENS')), ...(console ? { console } : {}), ...(saml ? { saml } : {}) };
}
