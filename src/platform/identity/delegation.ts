import { ForbiddenError } from '../errors/domain-error';
import { expandRoles } from './scopes';
import { UUID } from '../ids';

/** Anything that runs a parameterized query (a DataSource or an EntityManager). */
interface Queryable {
  query(sql: string, params?: unknown[]): Promise<unknown>;
}

/**
 * The scopes standing work (a goal's runs, an automation's runs) may act with now: of the scopes its
 * creator delegated when it was set up, those the creating API key of the same tenant still holds (its
 * own scopes and roles). Revoked or expired key, no key recorded (a JWT, whose standing cannot be
 * re-checked later), nothing delegated (work set up before delegation was recorded): no scopes. Fails
 * closed.
 */
export async function delegatedScopesNow(db: Queryable, tenant: string, delegated: readonly string[] | null, keyId: string | null): Promise<Set<string>> {
  if (!delegated?.length || !keyId || !UUID.test(keyId)) return new Set();
  const rows = (await db.query(
    `SELECT "scopes", "roles" FROM "api_key"
     WHERE "id" = $1::uuid AND "tenant" = $2 AND "revoked_at" IS NULL AND ("expires_at" IS NULL OR "expires_at" > now())`,
    [keyId, tenant],
  )) as Array<{ scopes: string[]; roles: string[] }>;
  if (!rows.length) return new Set();
  const held = new Set([...(rows[0].scopes ?? []), ...expandRoles(rows[0].roles ?? [])]);
  return new Set(delegated.filter((s) => held.has(s)));
}

/**
 * What to record when standing work is set up by `principal`: exactly the scopes the work needs
 * (`required`, which the principal must hold: see `requireDelegable`), and its key when it is one.
 */
export function delegationOf(principal: { scopes: ReadonlySet<string>; keyId?: string }, required: readonly string[]): { scopes: string[]; keyId: string | null } {
  return { scopes: [...new Set(required)].filter((s) => principal.scopes.has(s)).sort(), keyId: principal.keyId ?? null };
}

/**
 * Refuses to set up work that will act later on `principal`'s behalf with a scope it does not hold
 * now: 403 `forbidden` with `details.requiredScopes` (everything the work needs) and
 * `details.missingScopes`. Called before anything is written.
 */
export function requireDelegable(principal: { scopes: ReadonlySet<string> }, required: readonly string[], what: string): void {
  const all = [...new Set(required)].sort();
  const missing = all.filter((s) => !principal.scopes.has(s));
  if (missing.length) {
    throw new ForbiddenError(`${what} would act with scopes the credential does not hold (${missing.join(', ')}).`, { requiredScopes: all, missingScopes: missing });
  }
}
