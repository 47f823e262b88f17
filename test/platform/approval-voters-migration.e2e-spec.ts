/**
 * Migration 1764980000000 on a database that already holds votes: the decisions of pending gates get
 * their voters' canonical keys (a later spelling of an earlier voter keeps none), closed gates' keep
 * none, existing gates keep allowing self-approval, and the unique key then refuses a new spelling.
 */
import { DataSource } from 'typeorm';
import { MIGRATIONS } from '../../migrations';
import { runMigrations } from '../../src/platform/database/migration-runner';
import { useScratchDataSource } from '../support/scratch-db';

describe('migration: approval voters', () => {
  const scratch = useScratchDataSource();
  let ds: DataSource;

  beforeAll(() => {
    ds = scratch.ds;
  });

  it('keys the votes of pending gates canonically and makes the key unique per gate', async () => {
    const at = MIGRATIONS.findIndex((m) => new m().name === 'ApprovalVoters1764980000000');
    expect(at).toBeGreaterThan(0);
    await runMigrations(ds, MIGRATIONS.slice(0, at));
    const gate = async (state: string) =>
      ((await ds.query(
        `INSERT INTO "approval" ("tenant", "workspace_key", "subject_kind", "subject_id", "state", "required_scope", "quorum", "artifact_ref", "requested_by", "expires_at")
         VALUES ('t', '', 'run-node', gen_random_uuid(), $1, 'approvals:respond', 3, 'run:x#gate', 'owner', now() + interval '1 day') RETURNING "id"`,
        [state],
      )) as Array<{ id: string }>)[0].id;
    const pending = await gate('pending');
    const closed = await gate('granted');
    const vote = (approvalId: string, principal: string, offsetMs: number) =>
      ds.query(`INSERT INTO "approval_decision" ("tenant", "approval_id", "principal", "decision", "created_at") VALUES ('t', $1, $2, 'granted', now() + $3 * interval '1 millisecond')`, [
        approvalId,
        principal,
        offsetMs,
      ]);
    await vote(pending, 'alice', 0);
    await vote(pending, 'ALICE', 1);
    await vote(pending, ' Bob', 2);
    await vote(closed, 'carol', 0);

    await runMigrations(ds, MIGRATIONS);
    const rows = (await ds.query(`SELECT "approval_id", "principal", "voter_key" FROM "approval_decision" ORDER BY "approval_id" = $1 DESC, "created_at"`, [pending])) as Array<{
      approval_id: string;
      principal: string;
      voter_key: string | null;
    }>;
    expect(rows.map((r) => [r.principal, r.voter_key])).toEqual([
      ['alice', 'alice'],
      ['ALICE', null],
      [' Bob', 'bob'],
      ['carol', null],
    ]);
    expect((await ds.query(`SELECT DISTINCT "allow_self_approval", "named_voters_scope" FROM "approval"`)) as unknown[]).toEqual([{ allow_self_approval: true, named_voters_scope: null }]);
    await expect(ds.query(`INSERT INTO "approval_decision" ("tenant", "approval_id", "principal", "voter_key", "decision") VALUES ('t', $1, 'BOB', 'bob', 'granted')`, [pending])).rejects.toThrow(
      /approval_decision_voter_uq/,
    );
  });
});
