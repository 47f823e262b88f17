import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { HOST_CONFIG, HostConfig } from '../../../platform/config/host-config';
import { HostSecretStore } from '../../../platform/secrets/host-secret.store';

/** What a signed interrupt token carries (interrupt.md §Signed resolution tokens). */
export interface InterruptTokenPayload {
  v: 1;
  runId: string;
  nodeId: string;
  interruptId: string;
  expiresAt: string;
  intent: 'resolve' | 'inspect';
}

/**
 * `unverifiable`: a v2 token (`ow2.<alg>.<kid>.<payload>.<mac>`) under an algorithm this host does not
 * advertise, a kid it does not hold, or a MAC that does not verify (identity.md §4: `401
 * interrupt_token_invalid`, never `not_found`).
 */
export type TokenCheck = { ok: true; payload: InterruptTokenPayload } | { ok: false; reason: 'malformed' | 'invalid' | 'unverifiable' | 'expired'; payload?: InterruptTokenPayload };

/** The v2 token prefix and the one algorithm this host signs with (the interrupt record's `tokenAlgs`). */
const V2_PREFIX = 'ow2';
export const V2_TOKEN_ALG = 'hs256';

const SECRET_NAME = 'interrupt-token';
const B64URL = /^[A-Za-z0-9_-]+$/;

/**
 * Signs and verifies interrupt tokens: `base64url(JSON payload) "." base64url(HMAC-SHA256(secret,
 * first part))`. The secret is OPENWOP_INTERRUPT_TOKEN_SECRET, else a random one generated once and
 * kept in the database so every replica (and the next process) verifies what another signed. The
 * secret is never logged nor answered. Verification compares MACs in constant time. The database
 * secret is read at first use (a host starts while its database is away).
 */
@Injectable()
export class InterruptTokenService {
  private secret?: Buffer;

  constructor(
    private readonly secrets: HostSecretStore,
    @Inject(HOST_CONFIG) private readonly config: HostConfig,
  ) {}

  private async key(): Promise<Buffer> {
    if (this.secret) return this.secret;
    if (this.config.interruptTokenSecret) return (this.secret = Buffer.from(this.config.interruptTokenSecret, 'utf8'));
    // The first replica to need it writes it; every other one reads the same row.
    return (this.secret = (await this.secrets.getOrCreate(SECRET_NAME, () => randomBytes(32))).value);
  }

  private mac(key: Buffer, body: string): Buffer {
    return createHmac('sha256', key).update(body).digest();
  }

  /** The id of the key this host holds: derived from it, so every replica names the same kid and a rotated secret a new one. */
  private kid(key: Buffer): string {
    return `k${createHmac('sha256', key).update('openwop-interrupt-token-kid').digest('base64url').slice(0, 12)}`;
  }

  /**
   * A token: `base64url(payload).base64url(mac)` for major 1, and under major 2
   * `ow2.hs256.<kid>.<base64url(payload)>.<base64url(mac)>`, the MAC over everything before it.
   */
  async sign(payload: Omit<InterruptTokenPayload, 'v'>, major = 1): Promise<string> {
    const key = await this.key();
    const body = Buffer.from(JSON.stringify({ v: 1, ...payload })).toString('base64url');
    if (major !== 2) return `${body}.${this.mac(key, body).toString('base64url')}`;
    const signed = `${V2_PREFIX}.${V2_TOKEN_ALG}.${this.kid(key)}.${body}`;
    return `${signed}.${this.mac(key, signed).toString('base64url')}`;
  }

  /** `malformed`: not token-shaped at all; `invalid`: not signed by this host (or unreadable); `expired`: signed, past `expiresAt`. */
  async verify(token: string, now = Date.now()): Promise<TokenCheck> {
    const parts = token.split('.');
    if (token.length > 4096 || !parts.every((p) => B64URL.test(p))) return { ok: false, reason: 'malformed' };
    const key = await this.key();
    let body: string;
    let sig: string;
    let expected: Buffer;
    if (parts[0] === V2_PREFIX) {
      // A v2 token: verifiable only under the algorithm and the kid this host holds.
      if (parts.length !== 5 || parts[1] !== V2_TOKEN_ALG || parts[2] !== this.kid(key)) return { ok: false, reason: 'unverifiable' };
      [body, sig] = [parts[3], parts[4]];
      expected = this.mac(key, parts.slice(0, 4).join('.'));
      const given = Buffer.from(sig, 'base64url');
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) return { ok: false, reason: 'unverifiable' };
      return this.readPayload(body, now);
    }
    if (parts.length !== 2) return { ok: false, reason: 'invalid' };
    [body, sig] = parts;
    expected = this.mac(key, body);
    const given = Buffer.from(sig, 'base64url');
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return { ok: false, reason: 'invalid' };
    return this.readPayload(body, now);
  }

  /** The payload of a token whose MAC verified. */
  private readPayload(body: string, now: number): TokenCheck {
    let payload: InterruptTokenPayload;
    try {
      payload = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as InterruptTokenPayload;
    } catch {
      return { ok: false, reason: 'invalid' };
    }
    if (!payload || payload.v !== 1 || typeof payload.interruptId !== 'string' || typeof payload.expiresAt !== 'string') return { ok: false, reason: 'invalid' };
    const exp = Date.parse(payload.expiresAt);
    if (!Number.isFinite(exp) || exp <= now) return { ok: false, reason: 'expired', payload };
    return { ok: true, payload };
  }
}
