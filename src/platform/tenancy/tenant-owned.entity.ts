import { Column } from 'typeorm';

/**
 * The columns every tenant-owned table declares the same way, written once. TypeORM maps a decorated
 * abstract base's columns into each entity that extends it (the base is no table of its own), so a
 * table's columns stay exactly what its migrations built: the no-drift test holds them to that.
 *
 * A table whose `tenant` is part of its primary key (event streams, plugin state, goal runs...)
 * declares it itself: it is a different column there.
 */
export abstract class TenantOwnedEntity {
  @Column({ type: 'text' })
  tenant: string;
}

/** A row that belongs to a workspace of its tenant, or to the whole tenant when `workspace` is null. */
export abstract class WorkspaceOwnedEntity extends TenantOwnedEntity {
  @Column({ type: 'text', nullable: true })
  workspace: string | null;
}

/**
 * A row whose workspace is part of a unique index: '' stands for the whole tenant, because NULLs are
 * distinct in a unique index and two tenant-level rows of the same name would both be let in.
 */
export abstract class WorkspaceKeyedEntity extends TenantOwnedEntity {
  @Column({ name: 'workspace_key', type: 'text', default: '' })
  workspaceKey: string;
}
