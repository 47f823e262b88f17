import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { delegatedScopesNow } from '../../platform/identity/delegation';
import { UUID } from '../../platform/ids';

/**
 * The authority a goal's local runs act with: the scopes the goal's creator delegated that its API
 * key still holds (see `delegatedScopesNow`). Fails closed: an unknown goal, or one of another
 * tenant, delegates nothing.
 */
@Injectable()
export class GoalDelegationService {
  constructor(private readonly ds: DataSource) {}

  async scopesFor(goalId: string, tenant: string): Promise<Set<string>> {
    if (!UUID.test(goalId)) return new Set();
    const rows = (await this.ds.query(`SELECT "delegated_scopes", "delegated_key_id" FROM "goal" WHERE "id" = $1::uuid AND "tenant" = $2`, [goalId, tenant])) as Array<{
      delegated_scopes: string[] | null;
      delegated_key_id: string | null;
    }>;
    if (!rows.length) return new Set();
    return delegatedScopesNow(this.ds, tenant, rows[0].delegated_scopes, rows[0].delegated_key_id);
  }
}
