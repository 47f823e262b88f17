import type { Writable } from 'node:stream';

/**
 * What the client commands (`runs`, `approvals`) share: they talk to a running host over its HTTP API
 * with an API key, never to its database, and load nothing of the host itself.
 */
export interface HostClientOptions {
  url: string;
  key: string;
  out: Writable;
  err: Writable;
  /** The `--url` given on the command line, repeated in the commands the client suggests. */
  urlArgument?: string;
  /** Where `url` came from, named when the host cannot be reached there. */
  urlFrom?: '--url' | 'OPENWOP_HOST_URL' | 'default';
}

/** A client command got no answer from the host: the message names the URL tried and how to set it. */
export class HostUnreachableError extends Error {}

const CONNECT_FAILURES: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ENOTFOUND: 'unknown host name',
  EAI_AGAIN: 'unknown host name',
  ETIMEDOUT: 'timed out',
  UND_ERR_CONNECT_TIMEOUT: 'timed out',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
};

const URL_FROM = { '--url': 'from --url', OPENWOP_HOST_URL: 'from OPENWOP_HOST_URL', default: 'the default; neither --url nor OPENWOP_HOST_URL is set' };

/** What a failed `fetch` (fetch's TypeError, its cause the socket error) becomes. */
export function unreachable(o: Pick<HostClientOptions, 'url' | 'urlFrom'>, e: unknown): HostUnreachableError {
  const cause = (e as { cause?: { code?: unknown; message?: unknown } } | undefined)?.cause;
  const code = typeof cause?.code === 'string' ? cause.code : '';
  const why = CONNECT_FAILURES[code] ?? ((typeof cause?.message === 'string' && cause.message) || code || (e as Error)?.message || 'no connection');
  const from = o.urlFrom ? `; ${URL_FROM[o.urlFrom]}` : '';
  return new HostUnreachableError(`no answer from the host at ${baseUrl(o)} (${why}${from}): is it running? Give its URL with --url (before the subcommand) or OPENWOP_HOST_URL`);
}

/** `fetch` of a path of the host; a request that gets no answer throws a HostUnreachableError. */
export async function hostFetch(o: Pick<HostClientOptions, 'url' | 'urlFrom'>, path: string, init: RequestInit): Promise<Response> {
  try {
    return await fetch(`${baseUrl(o)}${path}`, init);
  } catch (e) {
    throw unreachable(o, e);
  }
}

interface ErrorBody {
  error?: string;
  message?: string;
  details?: { problems?: unknown };
}

/**
 * The refusal line of an error envelope: `<status> <error>: <message>`, then each of a
 * `validation_error`'s `details.problems` at its path (`/inputs/version: must have required property
 * 'version'`), so a missing or mistyped run input is named, not only counted.
 */
export function refusalLine(status: number, e: ErrorBody, fallback: string): string {
  const problems = Array.isArray(e.details?.problems)
    ? (e.details!.problems as Array<{ path?: unknown; message?: unknown }>).filter((p) => p && typeof p.message === 'string').map((p) => (typeof p.path === 'string' && p.path ? `${p.path}: ${p.message}` : String(p.message)))
    : [];
  return `${status} ${e.error ?? 'error'}: ${e.message ?? fallback}${problems.length ? ` (${problems.join('; ')})` : ''}`;
}

/** The host's base URL without a trailing slash. */
export function baseUrl(o: Pick<HostClientOptions, 'url'>): string {
  return o.url.replace(/\/+$/, '');
}

/** One JSON request; a non-2xx answer throws `<status> <error>: <message>` from the canonical envelope. */
export async function call(o: HostClientOptions, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Record<string, unknown>> {
  const res = await hostFetch(o, path, {
    method,
    headers: { authorization: `Bearer ${o.key}`, accept: 'application/json', ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
    body: body !== undefined ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  let json: Record<string, unknown> = {};
  try {
    json = text ? (JSON.parse(text) as Record<string, unknown>) : {};
  } catch {
    if (res.ok) throw new Error(`${res.status}: the host answered something that is not JSON`);
  }
  if (!res.ok) {
    throw new Error(refusalLine(res.status, json as ErrorBody, text));
  }
  return json;
}

/** How another client command is spelled for the same host, e.g. `openwop-host approvals --url U grant ID`. */
export function commandLine(o: Pick<HostClientOptions, 'urlArgument'>, group: string, ...args: string[]): string {
  return ['openwop-host', group, ...(o.urlArgument ? ['--url', o.urlArgument] : []), ...args].join(' ');
}
