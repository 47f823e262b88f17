/**
 * `ctx.http.safeFetch` (RFC 0076 §B, host-capabilities.md §host.http): outbound HTTP for node executors
 * through the host's SSRF guard, so a pack never resolves names or opens sockets itself. A tool or node that
 * reaches the network this way declares `egress: "safe-fetch"` in its descriptor.
 *
 * The host checks the URL (https only, no credentials in it, allowed ports, no local or metadata host), resolves
 * the host name once and refuses when any address it resolves to is private, loopback, link-local or reserved,
 * connects to the address it checked (no second lookup: DNS rebinding), follows redirects itself re-checking
 * every hop, refuses connection upgrades, and bounds the time and the size of the answer.
 */

export interface SafeFetchInit {
  /** GET (default), HEAD, POST, PUT, PATCH or DELETE. */
  method?: string;
  headers?: Record<string, string>;
  /** A request body (a string; JSON.stringify objects yourself). */
  body?: string;
  /** Deadline of the whole call, redirects included (default and ceiling: the host's). */
  timeoutMs?: number;
  /** Most bytes of the answer's body read (default and ceiling: the host's); more fails the call. */
  maxResponseBytes?: number;
  /** Redirects followed (each re-checked; more fails the call), 0 to follow none and get the 3xx (default and ceiling: the host's). */
  maxRedirects?: number;
  /**
   * A connection provider id (RFC 0120): the target host (and every redirect's) must also be one of that
   * provider's declared `apiHosts`, the allow-list its credentials may be sent to.
   */
  connection?: string;
  /**
   * Since 1.9 (RFC 0079): a connection of the run's tenant, by name or id, whose credential the host attaches to
   * the request; the pack never sees it. It is attached to a hop only when that hop's host is one of the
   * credential's audiences (its provider's `apiHosts`), decided again at every redirect; the host records each
   * decision as an `egress.decided` event of the run. Outside the audiences the call is refused (`audience`),
   * or sent without the credential when `credentialFallback` is `anonymous`.
   */
  credential?: string;
  /** The header the credential goes in: `authorization` (default, as `Bearer <credential>`) or another name (the bare credential). */
  credentialHeader?: string;
  /** Outside the credential's audiences: `deny` (default, the call is refused) or `anonymous` (sent without it). */
  credentialFallback?: 'deny' | 'anonymous';
}

export interface SafeFetchResponse {
  status: number;
  /** Response headers, lower-case names (a repeated header joined with ", "). */
  headers: Record<string, string>;
  /** The body as UTF-8 text. */
  body: string;
  /** The URL that answered (after redirects). */
  url: string;
  /** Redirects followed. */
  redirects: number;
}

/**
 * Why the host refused a call: `ssrf` (a guarded destination, at the first hop or a redirect), `upgrade` (a
 * `Connection: upgrade` / `Upgrade` request), `allowlist` (outside the connection's apiHosts), `limit` (time,
 * size or redirect count exceeded), `network` (the target did not answer), `audience` (the `credential` may not
 * be sent to that host, or its provenance cannot be evaluated: RFC 0079, fails closed).
 */
export type SafeFetchRefusal = 'ssrf' | 'upgrade' | 'allowlist' | 'limit' | 'network' | 'audience';

/** Thrown by `safeFetch` when the call is refused or fails; `code` is `safe_fetch_<refusal>`. */
export class SafeFetchError extends Error {
  readonly code: string;
  constructor(
    readonly refusal: SafeFetchRefusal,
    message: string,
  ) {
    super(message);
    this.code = `safe_fetch_${refusal}`;
  }
}

/** Since 1.9: the host's guarded HTTP client (`ctx.http`). */
export interface NodeHttp {
  safeFetch(url: string, init?: SafeFetchInit): Promise<SafeFetchResponse>;
}
