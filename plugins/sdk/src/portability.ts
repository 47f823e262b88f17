import { defineExtensionPoint } from './extension-point';

/**
 * Portability (RFC 0098): export a tenant's reusable estate as one secret-free bundle and import it
 * elsewhere. Each bundle item kind (`pack`, `prompt-template`, `connection-ref`, `schedule`, ...)
 * is served by one provider decorated with `@PortableKind({ kind })`.
 *
 * The host owns the bundle pipeline: shape and `bundleVersion` checks, the credential-value scan
 * (on export and import), the topological order of `dependsOn`, the scope check, the single import
 * transaction, idempotency reporting and the `import.applied` event. A provider only turns its own
 * entities into bundle items and back.
 */

/** The item kinds of `export-bundle.schema.json` (v1). */
export const BUNDLE_ITEM_KINDS = ['agent', 'pack', 'prompt-template', 'connection-ref', 'schedule', 'roster', 'org-chart'] as const;

export type BundleItemKind = (typeof BUNDLE_ITEM_KINDS)[number];

/** One item of an export bundle (`export-bundle.schema.json#/properties/items/items`). */
export interface BundleItem {
  kind: BundleItemKind;
  /** Stable id within the bundle; the target of other items' `dependsOn`. */
  ref: string;
  dependsOn?: string[];
  /**
   * The kind's own document. MUST NOT carry a credential value: a connection-ref carries only
   * provider ids and an opaque `credentialRef` (for example `[REDACTED:<id>]`).
   */
  payload: Record<string, unknown>;
}

/**
 * Whose estate is exported, and who owns what is imported. On import this is always the CALLER's
 * identity at the destination: a bundle's `source.originPrincipal` grants nothing.
 */
export interface PortabilityScope {
  tenant: string;
  workspace?: string;
  principal: string;
  /**
   * On import (since 1.3): the importer's authority for the items that act later on its behalf
   * (their `delegated` requirements, which the importer holds), to record as an installed
   * artifact's delegation. Absent on export.
   */
  delegation?: { scopes: readonly string[]; keyId?: string | null };
}

/** What importing one item requires of the importer (`PortableKindProvider.requiredScopes`). */
export interface PortableItemRequirements {
  /** Scopes the importer must hold now: those installing the item's kind directly requires. */
  scopes: string[];
  /** Scopes the imported item will act with later on the importer's behalf (also required now). */
  delegated?: string[];
  /** The item is tenant-wide (a connection): a workspace-bound importer is refused. */
  tenantLevel?: boolean;
}

export interface PortableViolation {
  /** JSON Pointer inside the item's payload ('' is the payload itself). */
  path: string;
  message: string;
}

export type PortablePlanAction = 'create' | 'update' | 'skip';

/** What importing one item would do, computed without writing anything. */
export interface PortableItemPlan {
  action: PortablePlanAction;
  /** Why, for humans (e.g. "identical pack already installed"). */
  reason: string;
  /** Local id of the existing entity the item maps to, when there is one. */
  targetId?: string;
  /**
   * The item's natural key in the destination (e.g. `node-pack:core.acme.tools`). Two items of one
   * bundle with the same key would overwrite each other: the host refuses such a bundle (422).
   */
  targetKey?: string;
  /**
   * Credential references the item needs and the destination does not hold: provider ids or refs,
   * never secret values. They must be bound again by an operator after the import.
   */
  secretsToRebind?: string[];
  /**
   * Non-empty when the item cannot be imported (malformed for its kind, or no installer for it
   * right now). The host refuses the whole import with 422 naming the item; nothing is written.
   */
  violations?: PortableViolation[];
}

export type PortableApplyResult = 'created' | 'updated' | 'skipped';

/** What importing one item did. */
export interface PortableItemOutcome {
  result: PortableApplyResult;
  reason?: string;
  /** Local id the host minted (or matched) for the item. */
  targetId?: string;
  secretsToRebind?: string[];
}

/**
 * The contract of one bundle item kind.
 *
 * `tx` is the host's transaction handle: for built-in providers a TypeORM `EntityManager`. Every
 * write of `apply` MUST go through it so the import stays all-or-nothing. `plan` may read through
 * it when given (the host passes it during apply, to see rows locked by the import), and MUST NOT
 * write.
 *
 * Idempotency: applying the same item twice must never create a second entity. Key each item on a
 * natural key in the destination scope (a pack's name, a template's id, a connection's name) and
 * resolve racing imports with a unique index (`INSERT ... ON CONFLICT`), so a concurrent apply
 * reports `skipped`/`updated`, never a second `created`.
 */
export interface PortableKindProvider {
  /**
   * Whether the kind can be exported and imported right now (for example: the artifact installer it
   * relies on is mounted). Discovery advertises only available kinds. Absent means available.
   */
  available?(): boolean;
  /**
   * Optional (since 1.3): what importing `item` requires of the importer, the same as installing an
   * entity of this kind directly. Asked for every item before anything is planned or written; one
   * unmet requirement refuses the whole import with 403 `forbidden` (`details.requiredScopes`).
   * Default: `packs:publish`.
   */
  requiredScopes?(scope: PortabilityScope, item: BundleItem): Promise<PortableItemRequirements>;
  /** The scope's entities of this kind as bundle items (refs only: no credential values). */
  export(scope: PortabilityScope): Promise<BundleItem[]>;
  /**
   * Optional (since 1.6): loads, before the import's transaction opens, what planning `items` reads outside
   * that transaction (on connections of its own: another service's cache, a remote listing), so `plan`
   * inside the transaction finds it loaded. On a database whose connections share one session (the
   * embedded engine) such a read made inside the transaction would wait behind it.
   */
  prepare?(scope: PortabilityScope, items: BundleItem[]): Promise<void>;
  /** What importing `item` into `scope` would do. Read-only. */
  plan(scope: PortabilityScope, item: BundleItem, tx?: unknown): Promise<PortableItemPlan>;
  /**
   * Optional batch form of `plan` for large bundles (one lookup for many items instead of one per
   * item): the plans of `items`, in the same order. Same rules as `plan`. When absent, the host
   * calls `plan` per item.
   */
  planMany?(scope: PortabilityScope, items: BundleItem[], tx?: unknown): Promise<PortableItemPlan[]>;
  /**
   * Imports `item`, re-owned to `scope`, inside the import transaction `tx`. Schedules and other
   * triggers are imported disabled; credentials are never imported (list them in `secretsToRebind`).
   */
  apply(scope: PortabilityScope, item: BundleItem, tx: unknown): Promise<PortableItemOutcome>;
  /**
   * Optional batch form of `apply` for large bundles (one statement per batch instead of one per
   * item): the outcomes of `items`, in the same order. Same rules as `apply`; the items of one call
   * never depend on each other. When a call throws, the host undoes the batch and applies its items
   * one by one through `apply` to name the failing item. When absent, the host calls `apply` per item.
   */
  applyMany?(scope: PortabilityScope, items: BundleItem[], tx: unknown): Promise<PortableItemOutcome[]>;
}

/** Marks a provider as the portability contribution for one bundle item kind. */
export const PortableKind = defineExtensionPoint<{ kind: BundleItemKind }>('portable-kind');
