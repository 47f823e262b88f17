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
