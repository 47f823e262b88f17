import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';

/**
 * The outbound SSRF guard of the host's own deliveries (webhooks: webhooks.md §Security, RFC 0093
 * delivery-time egress validation; the audit checkpoint export). A target is refused when it is not
 * https (unless allowed), carries credentials, names a metadata or localhost host, uses a port
 * outside the allowed list (443 unless configured), or is (or resolves to) an address in a private,
 * loopback, link-local, ULA, multicast or otherwise non-public range. An IPv6 address that carries
 * an IPv4 address (mapped, translated, compatible, NAT64, 6to4, Teredo, ISATAP) is refused when
 * either it or any IPv4 address it carries is.
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

/** An inclusive range of TCP ports (a single port is `[p, p]`). */
export type PortRange = readonly [number, number];
/** The ports a target may use when none are configured: https's own. */
export const DEFAULT_ALLOWED_PORTS: readonly PortRange[] = [[443, 443]];

export interface EgressPolicy {
  /** Accept http:// and private, loopback and link-local targets (local receivers, tests). */
  allowPrivate: boolean;
  /** The ports a target may use, the scheme's default port included (default: 443 only). */
  allowedPorts?: readonly PortRange[];
}

/** `unresolved`: the host name did not resolve (no address was seen, so none was refused). */
export type EgressRefusal = { ok: false; reason: string; unresolved?: boolean };
export type EgressCheck = { ok: true; url: URL } | EgressRefusal;

/**
 * The eight 16-bit groups of an IPv6 address in any textual form (compressed or not, any case,
 * leading zeros, a trailing dotted quad, a zone id), or undefined for anything else. Node's own
 * URL parser (the WHATWG host parser) writes the canonical form, whose groups are plain hex.
 */
export function ipv6Groups(address: string): number[] | undefined {
  const bare = address.replace(/%.*$/s, '');
  if (isIP(bare) !== 6) return undefined;
  let canonical: string;
  try {
    canonical = new URL(`http://[${bare}]/`).hostname.slice(1, -1);
  } catch {
    return undefined;
  }
  const part = (s: string | undefined) => (s ? s.split(':').map((g) => parseInt(g, 16)) : []);
  const [head, tail] = canonical.split('::');
  const h = part(head);
  const t = part(tail);
  const groups = tail === undefined ? h : [...h, ...new Array<number>(Math.max(0, 8 - h.length - t.length)).fill(0), ...t];
  return groups.length === 8 && groups.every((g) => Number.isInteger(g) && g >= 0 && g <= 0xffff) ? groups : undefined;
}

/**
 * Every IPv4 address an IPv6 address may carry: the last 32 bits of IPv4-compatible `::/96`,
 * IPv4-mapped `::ffff:0:0/96`, IPv4-translated `::ffff:0:0:0/96`, NAT64 `64:ff9b::/96` and the
 * local-use `64:ff9b:1::/48` (RFC 8215), and of an ISATAP interface id (`0:5efe` or `200:5efe`, any
 * prefix); bits 16-47 of 6to4 `2002::/16`; the server (bits 32-63) and the client (the last 32 bits,
 * inverted) of Teredo `2001:0::/32`.
 */
export function embeddedIpv4(g: readonly number[]): string[] {
  const v4 = (hi: number, lo: number) => `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  const zero = (from: number, to: number) => g.slice(from, to).every((x) => x === 0);
  const out: string[] = [];
  if (zero(0, 5) && (g[5] === 0 || g[5] === 0xffff)) out.push(v4(g[6], g[7]));
  if (zero(0, 4) && g[4] === 0xffff && g[5] === 0) out.push(v4(g[6], g[7]));
  if (g[0] === 0x64 && g[1] === 0xff9b) out.push(v4(g[6], g[7]));
  if (g[0] === 0x2002) out.push(v4(g[1], g[2]));
  if (g[0] === 0x2001 && g[1] === 0) out.push(v4(g[2], g[3]), v4(g[6] ^ 0xffff, g[7] ^ 0xffff));
  if ((g[4] & 0xfcff) === 0 && g[5] === 0x5efe) out.push(v4(g[6], g[7]));
  return out;
}

/** Whether an IP address literal is one the host's deliveries may not reach (anything that is not an IP address is). */
export function isDeniedAddress(address: string): boolean {
  const bare = address.replace(/%.*$/s, '');
  const family = isIP(bare);
  if (family === 4) return DENIED.check(bare, 'ipv4');
  if (family !== 6) return true;
  const groups = ipv6Groups(bare);
  if (!groups) return true;
  if (DENIED.check(groups.map((x) => x.toString(16)).join(':'), 'ipv6')) return true;
  return embeddedIpv4(groups).some((v4) => DENIED.check(v4, 'ipv4'));
}

function bareHost(url: URL): string {
  return url.hostname.replace(/^\[|\]$/g, '').replace(/\.$/, '').toLowerCase();
}

/** The port a URL connects to: its own, else its scheme's default. */
export function targetPort(url: URL): number {
  return url.port ? Number(url.port) : url.protocol === 'http:' ? 80 : 443;
}

export function describePorts(ports: readonly PortRange[]): string {
  return ports.map(([lo, hi]) => (lo === hi ? String(lo) : `${lo}-${hi}`)).join(', ');
}

/** The checks that need no resolver: scheme, credentials, port, literal addresses and denied names. */
export function checkWebhookUrl(raw: string, opts: EgressPolicy): EgressCheck {
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
  if (!opts.allowPrivate) {
    if (DENIED_NAMES.has(host) || host.endsWith('.localhost')) return { ok: false, reason: `host "${host}" is a local or metadata host` };
    if (isIP(host) && isDeniedAddress(host)) return { ok: false, reason: `address ${host} is private, loopback, link-local or reserved` };
  }
  // The port list holds with the relaxation too: a local receiver's port is listed like any other.
  const port = targetPort(url);
  const ports = opts.allowedPorts ?? DEFAULT_ALLOWED_PORTS;
  if (!ports.some(([lo, hi]) => port >= lo && port <= hi)) return { ok: false, reason: `port ${port} is not an allowed port (allowed: ${describePorts(ports)})` };
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
