import * as http from 'node:http';
import * as https from 'node:https';
import type { LookupFunction } from 'node:net';
import type { SafeFetchInit, SafeFetchRefusal, SafeFetchResponse } from '@openwop-host/plugin-sdk';
import { checkWebhookUrl, PortRange, Resolver, resolveWebhookTarget } from './egress-guard';

/**
 * The host's guarded outbound fetch for packs (`ctx.http.safeFetch`, RFC 0076 §B): the same SSRF guard as the
 * host's own deliveries (egress-guard.ts: scheme, credentials, ports, local and metadata names, every resolved
 * address checked, the connection pinned to the checked address), plus what a general client needs: redirects
 * followed by the host and each hop checked again, `Connection: upgrade` refused, one deadline for the whole
 * call, a bounded body, and an optional allow-list of hosts (a connection provider's `apiHosts`).
 */

export interface SafeFetchPolicy {
  /** Accept http:// and private, loopback and link-local targets (local receivers and tests only). */
  allowPrivate: boolean;
  allowedPorts?: readonly PortRange[];
  timeoutMs: number;
  maxResponseBytes: number;
  maxRedirects: number;
  /** Resolves names instead of DNS (tests, the rebinding seam). */
  resolver?: Resolver;
  /** When set, a hop's host must be allowed by it (exact or dot-anchored match, decided by the caller). */
  hostAllowed?: (host: string) => Promise<boolean>;
  /** A credential the call carries (RFC 0079), decided per hop by its owner; never carried across hops. */
  credential?: HopCredential;
}

/**
 * A credential a call carries, attached hop by hop by its owner (RFC 0079). `check` is asked before the hop's name
 * is resolved (a credential that may not go to the host stops the call there, before any lookup); `attach` once the
 * hop passed the guard, for the headers of that hop only; `guardRefused` when the guard refused the hop.
 */
export interface HopCredential {
  check(host: string): Promise<{ attach: boolean } | { refused: string }>;
  attach(host: string): Promise<Record<string, string>>;
  guardRefused(host: string | undefined): Promise<void>;
  /**
   * The hop answered 401 or 403 to the credential `attach` gave it: the headers of another credential to send the
   * same hop once more with (a two-key-overlap rotation's replaced credential, RFC 0046 §D), or nothing.
   */
  rejected?(host: string): Promise<Record<string, string> | undefined>;
}

/** The host's defaults and ceilings: a call may ask for less, never more. */
export const SAFE_FETCH_LIMITS = { timeoutMs: 10_000, maxResponseBytes: 1_048_576, maxRedirects: 5 } as const;

export type SafeFetchOutcome = { ok: true; response: SafeFetchResponse } | { ok: false; refusal: SafeFetchRefusal; reason: string };

const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE']);
/** Hop-by-hop and framing headers the host sets itself. */
const DROPPED = new Set(['host', 'content-length', 'transfer-encoding', 'connection', 'keep-alive', 'proxy-connection', 'te', 'trailer']);

const refuse = (refusal: SafeFetchRefusal, reason: string): SafeFetchOutcome => ({ ok: false, refusal, reason });

/** Whether the request asks to switch protocols (a WebSocket or h2c upgrade): refused, a 101 would hand the pack a raw socket. */
export function asksUpgrade(headers: Record<string, string> | undefined): boolean {
  for (const [k, v] of Object.entries(headers ?? {})) {
    const name = k.toLowerCase();
    if (name === 'upgrade' || name === 'http2-settings') return true;
    if (name === 'connection' && /(^|,)\s*upgrade\s*(,|$)/i.test(String(v))) return true;
  }
  return false;
}

/** One guarded call; never throws (the outcome says why it was refused). */
export async function safeFetch(rawUrl: string, init: SafeFetchInit = {}, policy: SafeFetchPolicy): Promise<SafeFetchOutcome> {
  const method = (init.method ?? 'GET').toUpperCase();
  if (!METHODS.has(method)) return refuse('network', `method ${method} is not allowed`);
  if (asksUpgrade(init.headers)) return refuse('upgrade', 'a connection upgrade is not allowed');
  const timeoutMs = Math.min(init.timeoutMs ?? policy.timeoutMs, policy.timeoutMs);
  const maxBytes = Math.min(init.maxResponseBytes ?? policy.maxResponseBytes, policy.maxResponseBytes);
  const maxRedirects = Math.min(init.maxRedirects ?? policy.maxRedirects, policy.maxRedirects);
  const deadline = Date.now() + timeoutMs;
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(init.headers ?? {})) if (!DROPPED.has(k.toLowerCase())) headers[k.toLowerCase()] = String(v);
  let url = rawUrl;
  let body = init.body;
  let verb = method;
  for (let redirects = 0; ; redirects++) {
    const checked = checkWebhookUrl(url, { allowPrivate: policy.allowPrivate, allowedPorts: policy.allowedPorts });
    if (!checked.ok) {
      await policy.credential?.guardRefused(hostOf(url));
      return refuse('ssrf', `${redirects ? `redirect ${redirects}: ` : ''}${checked.reason}`);
    }
    if (policy.hostAllowed && !(await policy.hostAllowed(checked.url.hostname))) return refuse('allowlist', `host "${checked.url.hostname}" is not one of the connection's apiHosts`);
    const credential = policy.credential ? await policy.credential.check(checked.url.hostname) : { attach: false };
    if ('refused' in credential) return refuse('audience', `${redirects ? `redirect ${redirects}: ` : ''}${credential.refused}`);
    const target = await resolveWebhookTarget(checked.url, { allowPrivate: policy.allowPrivate, resolver: policy.resolver });
    if (!target.ok) {
      if (!target.unresolved) await policy.credential?.guardRefused(checked.url.hostname);
      return refuse(target.unresolved ? 'network' : 'ssrf', `${redirects ? `redirect ${redirects}: ` : ''}${target.reason}`);
    }
    // The credential goes with this hop only: a redirect is decided again for its own host.
    const hopHeaders = credential.attach && policy.credential ? { ...headers, ...(await policy.credential.attach(checked.url.hostname)) } : headers;
    const left = deadline - Date.now();
    if (left <= 0) return refuse('limit', `no answer within ${timeoutMs} ms`);
    const pin = { address: target.address, family: target.family };
    let hop = await oneHop(checked.url, verb, hopHeaders, body, pin, left, maxBytes);
    if (!hop.ok) return hop;
    // Refused with the credential: during a rotation's overlap the same hop goes once more with the replaced one.
    if (credential.attach && (hop.status === 401 || hop.status === 403) && policy.credential?.rejected) {
      const other = await policy.credential.rejected(checked.url.hostname);
      if (other) {
        const rest = deadline - Date.now();
        if (rest <= 0) return refuse('limit', `no answer within ${timeoutMs} ms`);
        hop = await oneHop(checked.url, verb, { ...headers, ...other }, body, pin, rest, maxBytes);
        if (!hop.ok) return hop;
      }
    }
    const location = hop.status >= 300 && hop.status < 400 && hop.status !== 304 ? hop.headers.location : undefined;
    // maxRedirects 0: the caller follows nothing and gets the 3xx itself.
    if (!location || maxRedirects === 0) return { ok: true, response: { status: hop.status, headers: hop.headers, body: hop.body, url: checked.url.toString(), redirects } };
    if (redirects >= maxRedirects) return refuse('limit', `more than ${maxRedirects} redirects`);
    url = new URL(location, checked.url).toString();
    // 303 (and 301/302 of a POST, as browsers do) continue as a GET without the body.
    if (hop.status === 303 || ((hop.status === 301 || hop.status === 302) && verb === 'POST')) {
      verb = 'GET';
      body = undefined;
    }
    // Credentials are not carried to another origin.
    if (new URL(url).origin !== checked.url.origin) {
      delete headers.authorization;
      delete headers.cookie;
    }
  }
}

function hostOf(url: string): string | undefined {
  try {
    return new URL(url).hostname || undefined;
  } catch {
    return undefined;
  }
}

type Hop = { ok: true; status: number; headers: Record<string, string>; body: string } | Extract<SafeFetchOutcome, { ok: false }>;

function oneHop(url: URL, method: string, headers: Record<string, string>, body: string | undefined, pin: { address: string; family: 4 | 6 }, timeoutMs: number, maxBytes: number): Promise<Hop> {
  const pinned: LookupFunction = (_host, o, cb) => {
    if ((o as { all?: boolean }).all) (cb as unknown as (e: null, a: Array<{ address: string; family: number }>) => void)(null, [pin]);
    else cb(null, pin.address, pin.family);
  };
  const client = url.protocol === 'https:' ? https : http;
  return new Promise<Hop>((resolve) => {
    let done = false;
    const settle = (h: Hop) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve(h);
    };
    const req = client.request(url, { method, headers: { ...headers, ...(body !== undefined ? { 'content-length': String(Buffer.byteLength(body)) } : {}) }, lookup: pinned, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        size += c.length;
        if (size > maxBytes) {
          settle(refuse('limit', `the answer is larger than ${maxBytes} bytes`) as Hop);
          req.destroy();
          return;
        }
        chunks.push(c);
      });
      res.on('end', () => {
        const out: Record<string, string> = {};
        for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) out[k] = Array.isArray(v) ? v.join(', ') : v;
        settle({ ok: true, status: res.statusCode ?? 0, headers: out, body: Buffer.concat(chunks).toString('utf8') });
      });
      res.on('error', (e) => settle(refuse('network', e.message) as Hop));
    });
    // A server answering 101 would hand over the socket: never accepted.
    req.on('upgrade', (_res, socket) => {
      socket.destroy();
      settle(refuse('upgrade', 'the server switched protocols') as Hop);
    });
    const timer = setTimeout(() => {
      settle(refuse('limit', `no answer within the deadline`) as Hop);
      req.destroy();
    }, timeoutMs);
    req.on('error', (e) => settle(refuse('network', (e as NodeJS.ErrnoException).code ?? e.message) as Hop));
    req.end(body);
  });
}
