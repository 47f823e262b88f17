import createClient, { type Middleware } from 'openapi-fetch';
// The client types are generated from the committed OpenAPI document (`npm run openapi:generate`) and are
// the same the host's own tests use: a route or shape the console calls that the API no longer has fails
// the type check, so the console cannot drift from the API.
import type { components, paths } from '../../../generated/openapi';
import { credential } from '../session';

export type { components, paths };
export type Schemas = components['schemas'];

/** An error answer of the host, always shown with its canonical `error` and `message`. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly error: string,
    message: string,
    readonly details?: unknown,
  ) {
    super(message);
  }
}

/** Raised when the host stops accepting the signed-in credential (revoked or expired mid-session). */
export const CREDENTIAL_REFUSED = 'openwop-console:credential-refused';

export function reportRefusal(status: number, body: unknown): void {
  if (status === 401 && credential()) window.dispatchEvent(new CustomEvent(CREDENTIAL_REFUSED, { detail: toApiError(status, body) }));
}

const auth: Middleware = {
  onRequest({ request }) {
    const token = credential();
    if (token) request.headers.set('authorization', `Bearer ${token}`);
    // Signed in by single sign-on: the HttpOnly session cookie authenticates, with the header that proves same-origin.
    else request.headers.set('x-openwop-session', '1');
    return request;
  },
  async onResponse({ response }) {
    if (response.status === 401) reportRefusal(401, await response.clone().json().catch(() => undefined));
    return response;
  },
};

export const api = createClient<paths>({ baseUrl: window.location.origin });
api.use(auth);

function isEnvelope(v: unknown): v is { error: string; message: string; details?: unknown } {
  return typeof v === 'object' && v !== null && typeof (v as { error?: unknown }).error === 'string' && typeof (v as { message?: unknown }).message === 'string';
}

/** Turns any failed answer into an ApiError (the canonical envelope when the host sent one). */
export function toApiError(status: number, body: unknown): ApiError {
  if (isEnvelope(body)) return new ApiError(status, body.error, body.message, body.details);
  return new ApiError(status, 'unexpected_response', `The host answered ${status} without an error envelope.`);
}

/** Awaits an openapi-fetch call and returns its data, or throws an ApiError. */
export async function call<T>(p: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  let r: { data?: T; error?: unknown; response: Response };
  try {
    r = await p;
  } catch (e) {
    throw new ApiError(0, 'network_error', e instanceof Error ? e.message : 'The host could not be reached.');
  }
  if (!r.response.ok) throw toApiError(r.response.status, r.error);
  return r.data as T;
}
