import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';

/**
 * The outbound SSRF guard of the host's own deliveries (webhooks: webhooks.md §Security, RFC 0093
 * delivery-time egress validation; the audit checkpoint export). A
 * target is refused when it is not https (unless allowed), carries credentials, names a metadata or
 * localhost host, or is (or resolves to) an address in a private, loopback, link-local, ULA,
 * multicast or otherwise non-public range. IPv4 embedded in IPv6 (mapped, NAT64, 6to4) is checked
 * as the IPv4 address it carries.
 */
const DENIED = new BlockList();
for (const [net, bits] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.88.99.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['198.51.100.0', 24],
  ['203.0.113.0', 24], ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) DENIED.addSubnet(net, bits, 'ipv4');
for (const [net, bits] of [
  ['::', 128], ['::1', 128], ['fc00::', 7], ['fe80::', 10], ['fec0::', 10], ['ff00::', 8], ['2001:db8::', 32], ['100::', 64],
] as const) DENIED.addSubnet(net, bits, 'ipv6');

const DENIED_NAMES = new Set(['localhost', 'metadata', 'metadata.google.internal', 'metadata.goog', 'instance-data', 'instance-data.ec2.internal']);

/** `unresolved`: the host name did not resolve (no address was seen, so none was refused). */
export type EgressRefusal = { ok: false; reason: string; unresolved?: boolean };
export type EgressCheck = { ok: true; url: URL } | EgressRefusal;

/** The IPv4 address an IPv6 address carries (mapped ::ffff:0:0/96, NAT64 64:ff9b::/96, 6to4 2002::/16), if any. */
function embeddedIpv4(v6: string): string | undefined {
  const groups = expandIpv6(v6);
  if (!groups) return undefined;
  const v4 = (hi: number, lo: number) => `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  const zero = (from: number, to: number) => groups.slice(from, to).every((g) => g === 0);
  if (zero(0, 5) && groups[5] === 0xffff) return v4(groups[6], groups[7]);
  if (groups[0] === 0x64 && groups[1] === 0xff9b && zero(2, 6)) return v4(groups[6], groups[7]);
  if (groups[0] === 0x2002) return v4(groups[1], groups[2]);
  // IPv4-compatible (deprecated) ::a.b.c.d
  if (zero(0, 6) && (groups[6] !== 0 || groups[7] > 1)) return v4(groups[6], groups[7]);
  return undefined;
}

function expandIpv6(addr: string): number[] | undefined {
  let a = addr.toLowerCase().replace(/%.*$/, '');
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(a);
  if (dotted) {
    const p = dotted[1].split('.').map(Number);
    a = a.slice(0, -dotted[1].length) + `${((p[0] << 8) | p[1]).toString(16)}:${((p[2] << 8) | p[3]).toString(16)}`;
  }
  const [head, tail] = a.includes('::') ? a.split('::') : [a, undefined];
  const h = head ? head.split(':') : [];
  const t = tail !== undefined ? (tail ? tail.split(':') : []) : [];
  const fill = tail !== undefined ? 8 - h.length - t.length : 0;
  const all = [...h, ...Array(Math.max(0, fill)).fill('0'), ...t];
  if (all.length !== 8) return undefined;
  const n = all.map((g) => parseInt(g, 16));
  return n.every((g) => Number.isInteger(g) && g >= 0 && g <= 0xffff) ? n : undefined;
}

/** Whether an IP address literal is one the host's deliveries may not reach. */
export function isDeniedAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return DENIED.check(address, 'ipv4');
  if (family === 6) {
    const v4 = embeddedIpv4(address);
    if (v4 !== undefined) return DENIED.check(v4, 'ipv4');
    return DENIED.check(address.replace(/%.*$/, ''), 'ipv6');
  }
  return true;
}

function bareHost(url: URL): string {
  return url.hostname.replace(/^\[|\]$/g, '').replace(/\.$/, '').toLowerCase();
}

/** The checks that need no resolver: scheme, credentials, literal addresses and denied names. */
export function checkWebhookUrl(raw: string, opts: { allowPrivate: boolean }): EgressCheck {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, reason: 'url is not an absolute URL' };
  }
  if (url.protocol !== 'https:' && !(opts.allowPrivate && url.protocol === 'http:')) {
    return { ok: false, reason: opts.allowPrivate ? 'url must be http:// or https://' : 'url must be https://' };
  }
  if (url.username || url.password) return { ok: false, reason: 'url must not carry credentials' };
  const host = bareHost(url);
  if (!host) return { ok: false, reason: 'url has no host' };
  if (opts.allowPrivate) return { ok: true, url };
  if (DENIED_NAMES.has(host) || host.endsWith('.localhost')) return { ok: false, reason: `host "${host}" is a local or metadata host` };
  if (isIP(host) && isDeniedAddress(host)) return { ok: false, reason: `address ${host} is private, loopback, link-local or reserved` };
  return { ok: true, url };
}

export type Resolver = (host: string) => Promise<Array<{ address: string; family: number }>>;

export const systemResolver: Resolver = (host) => lookup(host, { all: true, verbatim: true });

/**
 * Resolves the URL's host once and validates every address it resolves to; the caller connects to
 * the returned address (pinned), so no second lookup can answer differently (DNS rebinding).
 */
export async function resolveWebhookTarget(
  url: URL,
  opts: { allowPrivate: boolean; resolver?: Resolver },
): Promise<{ ok: true; address: string; family: 4 | 6 } | EgressRefusal> {
  const host = bareHost(url);
  const literal = isIP(host);
  if (literal) {
    if (!opts.allowPrivate && isDeniedAddress(host)) return { ok: false, reason: `address ${host} is private, loopback, link-local or reserved` };
    return { ok: true, address: host, family: literal as 4 | 6 };
  }
  let addresses: Array<{ address: string; family: number }>;
  try {
    addresses = await (opts.resolver ?? systemResolver)(host);
  } catch (e) {
    return { ok: false, unresolved: true, reason: `host "${host}" does not resolve (${(e as NodeJS.ErrnoException).code ?? 'error'})` };
  }
  if (!addresses.length) return { ok: false, unresolved: true, reason: `host "${host}" does not resolve` };
  if (!opts.allowPrivate) {
    const bad = addresses.find((a) => isDeniedAddress(a.address));
    if (bad) return { ok: false, reason: `host "${host}" resolves to ${bad.address}, a private, loopback, link-local or reserved address` };
  }
  const first = addresses[0];
  return { ok: true, address: first.address, family: first.family === 6 ? 6 : 4 };
}
