import type { MigrationInterface, QueryRunner } from 'typeorm';

/** The canonical key of a voter as this migration computes it (NFKC, trimmed, case-folded). Frozen here on purpose. */
function voterKey(name: string): string {
  return name.normalize('NFKC').trim().toUpperCase().toLowerCase().normalize('NFKC');
}

/**
 * A quorum counts distinct voters, compared canonically: a decision records the voter's canonical
 * key (`voter_key`, unique per gate in place of the voter's spelling, so `alice` and `ALICE` are one
 * voter). A gate records whether the principal that opened it may approve it
 * (`allow_self_approval`, true for the gates that exist: their behaviour is unchanged) and the scope
 * its workflow designated to record named votes (`named_voters_scope`, none for existing gates).
 *
 * The keys of the decisions of pending gates (the only ones that still take votes) are filled in
 * here, in the order the votes were cast; a later vote whose key an earlier vote of the same gate
 * already holds keeps a null key (it was cast before spellings were compared). Decisions of closed
 * gates keep a null key.
 */
export class ApprovalVoters1764980000000 implements MigrationInterface {
  name = 'ApprovalVoters1764980000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "approval" ADD COLUMN IF NOT EXISTS "allow_self_approval" boolean NOT NULL DEFAULT true, ADD COLUMN IF NOT EXISTS "named_voters_scope" text`);
    await q.query(`ALTER TABLE "approval_decision" ADD COLUMN IF NOT EXISTS "voter_key" text`);
    const rows = (await q.query(
      `SELECT d."id", d."approval_id", d."principal" FROM "approval_decision" d JOIN "approval" a ON a."id" = d."approval_id"
       WHERE a."state" = 'pending' ORDER BY d."approval_id", d."created_at", d."id"`,
    )) as Array<{ id: string; approval_id: string; principal: string }>;
    const taken = new Set<string>();
    for (const r of rows) {
      const key = voterKey(r.principal);
      if (taken.has(`${r.approval_id}\u0000${key}`)) continue;
      taken.add(`${r.approval_id}\u0000${key}`);
      await q.query(`UPDATE "approval_decision" SET "voter_key" = $1 WHERE "id" = $2`, [key, r.id]);
    }
    await q.query(`DROP INDEX IF EXISTS "approval_decision_uq"`);
    await q.query(`CREATE UNIQUE INDEX IF NOT EXISTS "approval_decision_voter_uq" ON "approval_decision" ("tenant", "approval_id", "voter_key")`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX IF EXISTS "approval_decision_voter_uq"`);
    await q.query(`CREATE UNIQUE INDEX IF NOT EXISTS "approval_decision_uq" ON "approval_decision" ("tenant", "approval_id", "principal")`);
    await q.query(`ALTER TABLE "approval_decision" DROP COLUMN IF EXISTS "voter_key"`);
    await q.query(`ALTER TABLE "approval" DROP COLUMN IF EXISTS "named_voters_scope", DROP COLUMN IF EXISTS "allow_self_approval"`);
  }
}
