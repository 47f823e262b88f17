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
}

interface ErrorBody {
  error?: string;
  message?: string;
}

/** The host's base URL without a trailing slash. */
export function baseUrl(o: Pick<HostClientOptions, 'url'>): string {
  return o.url.replace(/\/+$/, '');
}

/** One JSON request; a non-2xx answer throws `<status> <error>: <message>` from the canonical envelope. */
export async function call(o: HostClientOptions, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Record<string, unknown>> {
  const res = await fetch(`${baseUrl(o)}${path}`, {
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
    const e = json as ErrorBody;
    throw new Error(`${res.status} ${e.error ?? 'error'}: ${e.message ?? text}`);
  }
  return json;
}

/** How another client command is spelled for the same host, e.g. `openwop-host approvals --url U grant ID`. */
export function commandLine(o: Pick<HostClientOptions, 'urlArgument'>, group: string, ...args: string[]): string {
  return ['openwop-host', group, ...(o.urlArgument ? ['--url', o.urlArgument] : []), ...args].join(' ');
}
