export type EgressDecision = { allowed: true; matched: string } | { allowed: false; code: 'no_api_hosts' | 'host_not_allowed' };

/** A bare hostname as a request carries it: labels of [a-z0-9-], at least two, no port or IP. */
const HOSTNAME = /^(?!-)[a-z0-9-]{1,63}(\.(?!-)[a-z0-9-]{1,63})*\.[a-z][a-z0-9-]*$/;

/**
 * RFC 0120: a credential may be sent to a host only when the host equals a declared `apiHosts` entry
 * or ends with "." + entry. Anything else fails closed: no apiHosts, an IP literal, a port, a
 * trailing dot, an empty or malformed host. DNS names are case-insensitive, so the request host is
 * lower-cased first; entries are lowercase by schema.
 */
export function checkEgress(apiHosts: readonly string[] | undefined, requestHost: string): EgressDecision {
  if (!apiHosts || apiHosts.length === 0) return { allowed: false, code: 'no_api_hosts' };
  const host = typeof requestHost === 'string' ? requestHost.toLowerCase() : '';
  if (!HOSTNAME.test(host)) return { allowed: false, code: 'host_not_allowed' };
  for (const entry of apiHosts) {
    if (host === entry || host.endsWith(`.${entry}`)) return { allowed: true, matched: entry };
  }
  return { allowed: false, code: 'host_not_allowed' };
}
