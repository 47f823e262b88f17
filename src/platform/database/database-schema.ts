import type { DataSource } from 'typeorm';
import type { MigrationClass } from './migration-runner';
import { WiringFault } from '../errors/internal-fault';

/** A class TypeORM maps to a table (decorated with `@Entity`). */
// eslint-disable-next-line @typescript-eslint/no-unsafe-function-type
export type EntityClass = Function;

/**
 * What the host's database holds: the entities TypeORM maps and the migrations that build them, in
 * the order they run. The platform owns neither list; the application root composes them (each
 * capability module declares its entities, `migrations/` lists the migrations) and hands them over,
 * so nothing under src/platform imports a capability or the migrations folder.
 */
export interface DatabaseSchema {
  readonly entities: readonly EntityClass[];
  readonly migrations: readonly MigrationClass[];
}

/** A capability module that owns tables lists their entities on its class: `static readonly entities = [...]`. */
export interface DeclaresEntities {
  readonly entities?: readonly EntityClass[];
}

const declared = new WeakMap<DataSource, DatabaseSchema>();

/** Records the schema a data source was opened for, so readiness can ask which of its migrations are pending. */
export function declareSchema(ds: DataSource, schema: DatabaseSchema): void {
  declared.set(ds, schema);
}

/** The schema declared for this data source (by openDatabase or PlatformModule.forRoot). */
export function schemaOf(ds: DataSource): DatabaseSchema {
  const schema = declared.get(ds);
  if (!schema) throw new WiringFault('no database schema was declared for this data source (openDatabase or PlatformModule.forRoot declares it)');
  return schema;
}
