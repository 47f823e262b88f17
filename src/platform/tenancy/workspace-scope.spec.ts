import { DataSource } from 'typeorm';
import { inScope, scopeCondition, scopedQuery } from './workspace-scope';

describe('workspace scope', () => {
  const tenantLevel = { tenant: 't1' };
  const inWorkspace = { tenant: 't1', workspace: 'w1' };

  describe('inScope (find options)', () => {
    it('a tenant-level caller: the tenant only, no workspace key at all (TypeORM refuses an undefined value)', () => {
      const where = inScope(tenantLevel, { id: 'x' });
      expect(where).toEqual({ id: 'x', tenant: 't1' });
      expect('workspace' in where).toBe(false);
    });

    it('a workspace-bound caller: the tenant and the workspace', () => {
      expect(inScope(inWorkspace, { id: 'x', principal: 'p' })).toEqual({ id: 'x', principal: 'p', tenant: 't1', workspace: 'w1' });
    });

    it('the scope wins over a field of the same name', () => {
      expect(inScope(inWorkspace, { tenant: 'other', workspace: 'other' })).toEqual({ tenant: 't1', workspace: 'w1' });
    });

    it('without fields, the scope alone', () => {
      expect(inScope(inWorkspace)).toEqual({ tenant: 't1', workspace: 'w1' });
    });
  });

  describe('scopedQuery (query builders)', () => {
    // No connection: the builder only renders SQL.
    const ds = new DataSource({ type: 'postgres' });
    const qb = () => ds.createQueryBuilder().select('g.id').from('goal', 'g').where('g.state = :s', { s: 'active' });

    it('adds the tenant on the main alias, after the conditions already there', () => {
      const [sql, params] = scopedQuery(qb(), tenantLevel).getQueryAndParameters();
      expect(sql).toBe('SELECT g.id FROM "goal" "g" WHERE g.state = $1 AND g.tenant = $2');
      expect(params).toEqual(['active', 't1']);
    });

    it('and the workspace when the caller has one, in the column the table uses', () => {
      expect(scopedQuery(qb(), inWorkspace).getQueryAndParameters()).toEqual(['SELECT g.id FROM "goal" "g" WHERE g.state = $1 AND g.tenant = $2 AND g.workspace = $3', ['active', 't1', 'w1']]);
      expect(scopedQuery(qb(), inWorkspace, 'workspace_key').getQuery()).toBe('SELECT g.id FROM "goal" "g" WHERE g.state = :s AND g.tenant = :scopeTenant AND g.workspace_key = :scopeWorkspace');
    });
  });

  describe('scopeCondition (plain SQL)', () => {
    it("numbers its placeholders after the statement's own parameters", () => {
      const params: unknown[] = ['run-1'];
      expect(scopeCondition(inWorkspace, params)).toBe('"tenant" = $2 AND "workspace" = $3');
      expect(params).toEqual(['run-1', 't1', 'w1']);
    });

    it('a tenant-level caller: no workspace condition and no parameter for it', () => {
      const params: unknown[] = [];
      expect(scopeCondition(tenantLevel, params)).toBe('"tenant" = $1');
      expect(params).toEqual(['t1']);
    });

    it('qualifies the columns with an alias, and names the workspace column', () => {
      const params: unknown[] = [];
      expect(scopeCondition(inWorkspace, params, { alias: 'a', workspaceColumn: 'workspace_key' })).toBe('a."tenant" = $1 AND a."workspace_key" = $2');
    });
  });
});
