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
 * size or redirect count exceeded), `network` (the target did not answer).
 */
export type SafeFetchRefusal = 'ssrf' | 'upgrade' | 'allowlist' | 'limit' | 'network';

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
