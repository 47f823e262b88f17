import { definitionSelect } from '../run-definition.entity';
import { principalSelect } from '../run-principal.entity';

/**
 * The columns of a claimed run that its row refers to by key instead of holding them (migrations
 * 1765300000000 and 1765300010000): the stored definition and the starter's scopes, each read by a
 * subquery on its table's primary key in the claim's RETURNING, under the column's own name.
 */
const REFERRED: Record<string, (run: string) => string> = {
  definition: definitionSelect,
  scopes: (run) => principalSelect(run, 'scopes'),
};

/** A claimed column as a RETURNING list names it: `alias` is the run table's alias with its dot (`r.`), or '' for the bare table. */
export function claimedColumn(alias: string, column: string): string {
  const referred = REFERRED[column];
  return referred ? `(${referred(alias ? alias.slice(0, -1) : '"run"')}) AS "${column}"` : `${alias}"${column}"`;
}
