import type { FastifyRequest } from 'fastify';
import { ValidationError } from '../../../platform/errors/domain-error';

/** Request helpers of the run routes (runs, run-control and run-events controllers). */

/** The absolute base URL of the request (the run URLs of a 201 are under it). */
export function baseUrl(req: FastifyRequest): string {
  const host = req.headers.host;
  if (!host || !/^[A-Za-z0-9.:\[\]-]{1,300}$/.test(host)) return '';
  return `${req.protocol === 'https' ? 'https' : 'http'}://${host}`;
}

/** If-None-Match's weak comparison (RFC 9110 §13.1.2): `*`, or any listed tag equal to ours ignoring `W/`. */
export function etagMatches(header: string, tag: string): boolean {
  const bare = (t: string) => t.trim().replace(/^W\//, '');
  return header.split(',').some((t) => t.trim() === '*' || bare(t) === tag);
}

/** A single-valued request header (a repeated one is malformed). */
export function header(req: FastifyRequest, name: string): string | undefined {
  const v = req.headers[name];
  if (Array.isArray(v)) throw new ValidationError(`Send one ${name} header.`, { header: name });
  return v;
}

/** The longest `Prefer: wait` honoured (RFC 7240 §4.3 lets the server cap it; `Preference-Applied` says what was). */
export const MAX_PREFER_WAIT_SECONDS = 60;

/**
 * The seconds of a request's `Prefer: wait=N` (RFC 7240 §4.3), capped at MAX_PREFER_WAIT_SECONDS; the
 * first `wait` counts. Absent, `0` or not a whole number of seconds: undefined (RFC 7240 §2: a preference
 * the server does not understand is ignored, not refused; no `Preference-Applied` then tells the client).
 */
export function preferredWait(req: FastifyRequest): number | undefined {
  const raw = req.headers.prefer;
  for (const value of Array.isArray(raw) ? raw : raw === undefined ? [] : [raw]) {
    for (const pref of value.split(',')) {
      const name = /^\s*([A-Za-z0-9!#$%&'*+.^_`|~-]+)/.exec(pref)?.[1];
      if (name?.toLowerCase() !== 'wait') continue;
      const m = /^\s*wait\s*=\s*(?:(\d{1,12})|"(\d{1,12})")\s*(?:;.*)?$/i.exec(pref);
      const seconds = m ? Math.min(Number(m[1] ?? m[2]), MAX_PREFER_WAIT_SECONDS) : 0;
      return seconds > 0 ? seconds : undefined;
    }
  }
  return undefined;
}
