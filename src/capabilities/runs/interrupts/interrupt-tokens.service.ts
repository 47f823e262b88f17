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

export type TokenCheck = { ok: true; payload: InterruptTokenPayload } | { ok: false; reason: 'malformed' | 'invalid' | 'expired'; payload?: InterruptTokenPayload };

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

  async sign(payload: Omit<InterruptTokenPayload, 'v'>): Promise<string> {
    const body = Buffer.from(JSON.stringify({ v: 1, ...payload })).toString('base64url');
    return `${body}.${this.mac(await this.key(), body).toString('base64url')}`;
  }

  /** `malformed`: not token-shaped at all; `invalid`: not signed by this host (or unreadable); `expired`: signed, past `expiresAt`. */
  async verify(token: string, now = Date.now()): Promise<TokenCheck> {
    const parts = token.split('.');
    if (token.length > 4096 || !parts.every((p) => B64URL.test(p))) return { ok: false, reason: 'malformed' };
    if (parts.length !== 2) return { ok: false, reason: 'invalid' };
    const [body, sig] = parts;
    const expected = this.mac(await this.key(), body);
    const given = Buffer.from(sig, 'base64url');
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return { ok: false, reason: 'invalid' };
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
