import type { DataSource } from 'typeorm';
import { GoalEntity } from './goal.entity';

/**
 * Turns raw `goal` rows (from `SELECT *` or `UPDATE ... RETURNING *`) into entities by the entity
 * metadata, so the scheduler can claim and read a whole batch in one statement.
 */
export function hydrateGoals(ds: DataSource, raw: Array<Record<string, unknown>>): GoalEntity[] {
  const meta = ds.getMetadata(GoalEntity);
  return raw.map((r) => {
    const g = new GoalEntity();
    for (const c of meta.columns) {
      (g as unknown as Record<string, unknown>)[c.propertyName] = ds.driver.prepareHydratedValue(r[c.databaseName], c);
    }
    return g;
  });
}
