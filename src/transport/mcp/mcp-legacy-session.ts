import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import type { Principal } from '../../platform/identity/principal';
import { HostSecretStore } from '../../platform/secrets/host-secret.store';
import type { HeaderBag } from './mcp-wire';

/** The host secret legacy session ids are signed with. */
const SESSION_SECRET = 'mcp-legacy-session';
const SESSION_HEADER = 'mcp-session-id';

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** What a session id carries: the caller it was issued to and what its client declared at `initialize`. */
interface SessionClaims {
  /** tenant and principal, so another caller cannot present it. */
  t: string;
  p: string;
  /** The client handles `elicitation/create` requests. */
  e: boolean;
}

/**
 * The 2025-06-18 profile's `Mcp-Session-Id`, kept without server state: the id the mount answers a
 * legacy `initialize` with is the client's declared capabilities (only what the mount acts on:
 * elicitation), signed and bound to the caller, and a later request carrying it is read back through
 * it. No session id, a forged one, or one issued to another caller: no capability (the mount then
 * sends the client nothing it did not declare). Any replica reads it: the key is the host's.
 */
@Injectable()
export class McpLegacySessions {
  private key?: Promise<Buffer>;

  constructor(private readonly secrets: HostSecretStore) {}

  private secret(): Promise<Buffer> {
    this.key ??= this.secrets.getOrCreate(SESSION_SECRET, () => randomBytes(32)).then(({ value }) => value);
    this.key.catch(() => (this.key = undefined));
    return this.key;
  }

  private async mac(body: string): Promise<string> {
    return createHmac('sha256', await this.secret()).update(body).digest('base64url');
  }

  /** The session id of a legacy `initialize` whose client declared `capabilities`; undefined when it declared nothing the mount acts on. */
  async issue(principal: Principal, capabilities: unknown): Promise<string | undefined> {
    const caps = isObject(capabilities) ? capabilities : {};
    if (!isObject(caps.elicitation)) return undefined;
    const body = Buffer.from(JSON.stringify({ t: principal.tenant, p: principal.principal, e: true } satisfies SessionClaims)).toString('base64url');
    return `${body}.${await this.mac(body)}`;
  }

  /** The capabilities a request's session id declares for this caller ({} without a valid one). */
  async capabilities(principal: Principal, headers: HeaderBag): Promise<Record<string, unknown>> {
    const raw = headers[SESSION_HEADER];
    const id = Array.isArray(raw) ? undefined : raw;
    if (!id || id.length > 1024) return {};
    const [body, mac] = id.split('.');
    if (!body || !mac) return {};
    const want = Buffer.from(await this.mac(body));
    const got = Buffer.from(mac);
    if (want.length !== got.length || !timingSafeEqual(want, got)) return {};
    let claims: Partial<SessionClaims>;
    try {
      claims = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as Partial<SessionClaims>;
    } catch {
      return {};
    }
    if (claims.t !== principal.tenant || claims.p !== principal.principal) return {};
    return claims.e === true ? { elicitation: {} } : {};
  }
}
