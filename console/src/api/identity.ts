/** Who the signed-in credential is (`GET /v1/whoami`): tenant, workspace, principal and scopes. */
import type { Identity } from '../session';
import { api, call } from './client';

export async function whoami(): Promise<Identity> {
  const me = await call(api.GET('/v1/whoami'));
  return { ...me, scopes: new Set(me.scopes) };
}
