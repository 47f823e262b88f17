import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { expandRoles } from '../../platform/identity/scopes';

/**
 * The authority a goal's local runs act with. A goal records the scopes its creator held and, when
 * the creator was an API key, which key: a run started now gets the recorded scopes that key still
 * holds (its own scopes and roles), and none once the key is revoked or expired. A goal created by
 * any other credential (a JWT, whose standing cannot be re-checked later) delegates nothing, and so
 * does a goal created before delegation was recorded: its runs can call only tools that require no
 * scope. Fails closed: no goal, no key of the goal's tenant, nothing.
 */
@Injectable()
export class GoalDelegationService {
  constructor(private readonly ds: DataSource) {}

  async scopesFor(goalId: string, tenant: string): Promise<Set<string>> {
    if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(goalId)) return new Set();
    const rows = (await this.ds.query(
      `SELECT g."delegated_scopes" AS delegated, k."scopes" AS key_scopes, k."roles" AS key_roles,
              (k."id" IS NOT NULL AND k."revoked_at" IS NULL AND (k."expires_at" IS NULL OR k."expires_at" > now())) AS active
       FROM "goal" g LEFT JOIN "api_key" k ON k."id" = g."delegated_key_id" AND k."tenant" = g."tenant"
       WHERE g."id" = $1::uuid AND g."tenant" = $2`,
      [goalId, tenant],
    )) as Array<{ delegated: string[] | null; key_scopes: string[] | null; key_roles: string[] | null; active: boolean }>;
    const row = rows[0];
    if (!row?.delegated || !row.active) return new Set();
    const held = new Set([...(row.key_scopes ?? []), ...expandRoles(row.key_roles ?? [])]);
    return new Set(row.delegated.filter((s) => held.has(s)));
  }
}
