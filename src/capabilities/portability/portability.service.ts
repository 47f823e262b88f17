import { AuditLogService, AuditRecord, auditActor } from '../../platform/audit/audit-log.service';
import { Inject, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import {
  BUNDLE_ITEM_KINDS,
  BundleItem,
  BundleItemKind,
  PortabilityScope,
  PortableApplyResult,
  PortableItemOutcome,
  PortableItemPlan,
  PortableItemRequirements,
  PortableKind,
  PortableKindProvider,
  PortableViolation,
} from '@openwop-host/plugin-sdk';
import { collectExtensions, ExtensionMeta } from '../../platform/plugins/extension-registry';
import { DataSource, EntityManager } from 'typeorm';
import { HOST_CONFIG, HostConfig } from '../../platform/config/host-config';
import { DomainError, ForbiddenError, UnprocessableError } from '../../platform/errors/domain-error';
import { EventLogService, HOST_STREAM } from '../../platform/events/event-log.service';
import { delegationOf, requireDelegable } from '../../platform/identity/delegation';
import type { Principal } from '../../platform/identity/principal';
import { SchemaRegistry } from '../../platform/schemas/schema-registry';
import {
  bundleFromBody,
  checkBundleCredentials,
  checkBundleShape,
  ExportBundle,
  findBundleCredentials,
  pushTo,
  SUPPORTED_BUNDLE_VERSION,
  topologicalOrder,
} from './bundle-checks';
import { portabilityConfig, PortabilityConfig } from './portability.config';
import { bundleProblems, ImportPlan, PlanEntry, PlannedItem, planView, prepareKinds } from './import-plan';
import type { ImportingScope } from './kinds/artifact-backed-portable-kind';
import { ExtensionFault, InvariantViolation } from '../../platform/errors/internal-fault';

export const EXPORT_SCOPE = 'portability:export';
/** Items per `planMany` call (a provider may read all of a kind once per call). */
const PLAN_BATCH = 10_000;
/** Items per `applyMany` call (one registry statement per step per batch). */
const APPLY_BATCH = 2_000;
export const IMPORT_SCOPE = 'portability:import';
/** What importing an item of a kind whose provider declares nothing requires (fail closed). */
const DEFAULT_IMPORT_ITEM_SCOPE = 'packs:publish';

export type ItemResult = PortableApplyResult | 'failed';

export interface AppliedItem {
  ref: string;
  kind: BundleItemKind;
  /** The same value as `result` (readers use either name). */
  action: ItemResult;
  result: ItemResult;
  reason?: string;
  targetId?: string;
  secretsToRebind?: string[];
}

export interface ImportCounts {
  created: number;
  updated: number;
  skipped: number;
  failed: number;
}

/** The apply answer. */
export interface ImportResult {
  dryRun: false;
  migrated: true;
  bundleVersion: '1';
  bundleOrigin: string;
  itemCount: number;
  order: string[];
  refs: string[];
  items: AppliedItem[];
  counts: ImportCounts;
  conflicts: PlanEntry[];
  secretsToRebind: string[];
  /** Items created or updated. */
  imported: number;
}

export interface ImportProgress {
  phase: 'plan' | 'apply';
  done: number;
  total: number;
}

export interface ImportOptions {
  dryRun: boolean;
  onProgress?: (p: ImportProgress) => void;
}

/**
 * Export and import of a tenant's reusable estate (RFC 0098). The bundle pipeline lives here; each
 * item kind is a `@PortableKind` provider (built-in or from a plugin).
 *
 * Import order (normative): shape and bundleVersion → credential scan → dependsOn order → scope
 * check → per-item checks → one transaction. Everything before the scope check is about the bundle
 * alone, so a leaky or cyclic bundle is refused with 422 whoever sends it.
 */
@Injectable()
export class PortabilityService implements OnApplicationBootstrap {
  private readonly logger = new Logger('Portability');
  private readonly providers = new Map<BundleItemKind, PortableKindProvider>();
  private readonly settings: PortabilityConfig;

  constructor(
    private readonly ds: DataSource,
    private readonly discovery: DiscoveryService,
    private readonly events: EventLogService,
    @Inject(HOST_CONFIG) config: HostConfig,
    private readonly audit: AuditLogService,
  ) {
    this.settings = portabilityConfig(config);
  }

  onApplicationBootstrap(): void {
    const found = collectExtensions<ExtensionMeta<typeof PortableKind>, PortableKindProvider>(this.discovery, {
      name: 'portable-kind provider',
      metadataKey: PortableKind.key,
      key: (meta) => meta.kind,
      validate: (meta) => ((BUNDLE_ITEM_KINDS as readonly string[]).includes(meta.kind) ? undefined : `@PortableKind: "${meta.kind}" is not a bundle item kind`),
    });
    for (const { meta, provider } of found) this.providers.set(meta.kind, provider);
  }

  /** Kinds that can be exported and imported right now (a provider exists and is available). */
  kinds(): BundleItemKind[] {
    return BUNDLE_ITEM_KINDS.filter((k) => {
      const p = this.providers.get(k);
      return !!p && (p.available?.() ?? true);
    });
  }

  get maxItems(): number {
    return this.settings.maxItems;
  }

  // ---------------------------------------------------------------- export

  async exportBundle(principal: Principal, kinds?: readonly string[]): Promise<ExportBundle> {
    requireScope(principal, EXPORT_SCOPE);
    const scope = toScope(principal);
    const wanted = kinds?.length ? this.kinds().filter((k) => kinds.includes(k)) : this.kinds();
    const items: BundleItem[] = [];
    for (const kind of wanted) {
      for (const item of await this.providers.get(kind)!.export(scope)) items.push({ ...item, kind });
    }
    const refs = new Set<string>();
    const duplicateKinds = new Set<string>();
    for (const item of items) {
      if (refs.has(item.ref)) duplicateKinds.add(item.kind);
      refs.add(item.ref);
    }
    // A kinds filter can leave an edge pointing outside the bundle; an importer refuses those.
    for (const item of items) item.dependsOn = (item.dependsOn ?? []).filter((d) => refs.has(d));
    const bundle: ExportBundle = {
      bundleVersion: SUPPORTED_BUNDLE_VERSION,
      source: { origin: this.settings.origin ?? `openwop-host:${principal.tenant}`, exportedAt: new Date().toISOString(), originPrincipal: principal.principal },
      items,
    };
    // The host's own scan on every export: refuse to emit a leak rather than trust each provider.
    const leaks = findBundleCredentials(bundle);
    if (leaks.length) {
      this.logger.error({ msg: 'export refused: credential material in the bundle', places: leaks.length, keyPaths: leaks.map((l) => l.keyPath) });
      throw new UnprocessableError('export_credential_material', 'The estate holds a credential value where only references belong; nothing was exported.', {
        findings: leaks.slice(0, 50).map((l) => ({ ref: l.ref, kind: l.kind, path: l.path, reason: l.reason })),
      });
    }
    if (duplicateKinds.size) throw new ExtensionFault(`portable kind(s) ${[...duplicateKinds].join(', ')} exported duplicate refs`);
    const violations = SchemaRegistry.shared().validate('export-bundle', bundle);
    if (violations.length) throw new InvariantViolation(`export produced an invalid bundle: ${JSON.stringify(violations.slice(0, 5))}`);
    return bundle;
  }

  // ---------------------------------------------------------------- import

  async importBundle(principal: Principal, body: unknown, opts: { dryRun: true; onProgress?: ImportOptions['onProgress'] }): Promise<ImportPlan>;
  async importBundle(principal: Principal, body: unknown, opts: { dryRun: false; onProgress?: ImportOptions['onProgress'] }): Promise<ImportResult>;
  async importBundle(principal: Principal, body: unknown, opts: ImportOptions): Promise<ImportPlan | ImportResult>;
  async importBundle(principal: Principal, body: unknown, opts: ImportOptions): Promise<ImportPlan | ImportResult> {
    const bundle = checkBundleShape(bundleFromBody(body), this.settings.maxItems);
    checkBundleCredentials(bundle);
    const order = topologicalOrder(bundle.items);
    requireScope(principal, IMPORT_SCOPE);
    // Re-ownership: the caller's identity at the destination; source.originPrincipal grants nothing.
    const base: ImportingScope = { ...toScope(principal), installerScopes: principal.scopes };
    // An import installs nothing its importer could not install directly, and what will act later
    // acts with exactly the importer's scopes it needs (recorded as the delegation).
    const needs = await this.requirementsOf(base, order);
    if (needs.tenantLevel.length && principal.workspace) {
      throw new ForbiddenError('The bundle holds tenant-wide items (connections, connection packs): only a tenant-level credential imports them; nothing was imported.', {
        requiredScopes: needs.scopes,
        tenantLevel: true,
        items: needs.tenantLevel.slice(0, 50),
      });
    }
    requireDelegable(principal, needs.scopes, 'This import');
    const scope: PortabilityScope = needs.delegated.length ? { ...base, delegation: delegationOf(principal, needs.delegated) } : base;
    if (opts.dryRun) return planView(bundle, order, await this.planAll(scope, order, undefined, opts.onProgress));
    return this.applyAll(scope, bundle, order, opts.onProgress, auditActor(principal));
  }

  /**
   * Everything importing `order` requires of the importer: per item, what its kind's provider says
   * (default `packs:publish`), all together; and the refs of tenant-wide items.
   */
  private async requirementsOf(scope: PortabilityScope, order: BundleItem[]): Promise<{ scopes: string[]; delegated: string[]; tenantLevel: string[] }> {
    const scopes = new Set<string>();
    const delegated = new Set<string>();
    const tenantLevel: string[] = [];
    for (const item of order) {
      const provider = this.providers.get(item.kind);
      // A kind this host does not import is refused later (422), whoever sends it.
      if (!provider || !(provider.available?.() ?? true)) continue;
      const r: PortableItemRequirements = provider.requiredScopes ? await provider.requiredScopes(scope, item) : { scopes: [DEFAULT_IMPORT_ITEM_SCOPE] };
      for (const s of r.scopes) scopes.add(s);
      for (const s of r.delegated ?? []) {
        scopes.add(s);
        delegated.add(s);
      }
      if (r.tenantLevel) tenantLevel.push(item.ref);
    }
    return { scopes: [...scopes].sort(), delegated: [...delegated].sort(), tenantLevel };
  }

  private async planAll(scope: PortabilityScope, order: BundleItem[], tx: EntityManager | undefined, onProgress?: ImportOptions['onProgress']): Promise<PlannedItem[]> {
    const plans = await this.planItems(scope, order, tx, onProgress);
    const out: PlannedItem[] = [];
    const targets = new Map<string, string>();
    for (const [n, item] of order.entries()) {
      const plan = plans[n];
      const entry: PlannedItem = { ref: item.ref, kind: item.kind, action: plan.violations?.length ? 'conflict' : plan.action, reason: plan.reason };
      if (plan.targetId) entry.targetId = plan.targetId;
      if (plan.secretsToRebind?.length) entry.secretsToRebind = plan.secretsToRebind;
      if (plan.violations?.length) entry.violations = plan.violations;
      if (plan.targetKey && entry.action !== 'conflict') {
        const other = targets.get(plan.targetKey);
        if (other) {
          entry.action = 'conflict';
          entry.reason = `Item "${item.ref}" and item "${other}" would both install ${plan.targetKey}.`;
        } else targets.set(plan.targetKey, item.ref);
      }
      out.push(entry);
    }
    return out;
  }

  /** The providers' plans, in bundle order; batched per kind where a provider offers `planMany`. */
  private async planItems(scope: PortabilityScope, order: BundleItem[], tx: EntityManager | undefined, onProgress?: ImportOptions['onProgress']): Promise<PortableItemPlan[]> {
    const plans: PortableItemPlan[] = new Array<PortableItemPlan>(order.length);
    const byKind = new Map<BundleItemKind, number[]>();
    order.forEach((item, i) => pushTo(byKind, item.kind, i));
    let done = 0;
    const progressed = (n: number) => {
      done += n;
      onProgress?.({ phase: 'plan', done, total: order.length });
    };
    for (const [kind, indexes] of byKind) {
      const provider = this.providers.get(kind);
      if (!provider || !(provider.available?.() ?? true)) {
        for (const i of indexes) plans[i] = { action: 'skip', reason: `This host does not import "${kind}" items.`, violations: [{ path: '', message: `unsupported kind "${kind}"` }] };
        progressed(indexes.length);
        continue;
      }
      if (provider.planMany) {
        for (let start = 0; start < indexes.length; start += PLAN_BATCH) {
          const chunk = indexes.slice(start, start + PLAN_BATCH);
          const result = await provider.planMany(scope, chunk.map((i) => order[i]), tx);
          if (result.length !== chunk.length) throw new ExtensionFault(`portable kind "${kind}" planned ${result.length} of ${chunk.length} items`);
          chunk.forEach((i, k) => (plans[i] = result[k]));
          progressed(chunk.length);
        }
      } else {
        for (const i of indexes) {
          plans[i] = await provider.plan(scope, order[i], tx);
          progressed(1);
        }
      }
    }
    return plans;
  }

  private async applyAll(scope: PortabilityScope, bundle: ExportBundle, order: BundleItem[], onProgress: ImportOptions['onProgress'] | undefined, actor: AuditRecord['actor']): Promise<ImportResult> {
    await prepareKinds(this.providers, scope, order);
    return this.ds.transaction(async (m) => {
      // The plan is made inside the transaction, once: every item is checked before the first
      // write, and an item already present byte-for-byte is reported skipped without touching it
      // (re-importing a large bundle costs a few reads).
      const planned = await this.planAll(scope, order, m, onProgress);
      const refused = planned.filter((p) => p.action === 'conflict');
      if (refused.length) {
        const first = refused[0];
        throw new UnprocessableError('bundle_item_invalid', `Item "${first.ref}" (${first.kind}) cannot be imported: ${first.reason} Nothing was imported.`, {
          items: refused.slice(0, 50).map((p) => ({ ref: p.ref, kind: p.kind, reason: p.reason, violations: p.violations ?? [] })),
          // Every problem of every refused item, each a JSON Pointer into the bundle.
          problems: bundleProblems(bundle, refused),
        });
      }
      const outcomes = new Array<PortableItemOutcome>(order.length);
      let done = 0;
      const progressed = (n: number) => {
        done += n;
        onProgress?.({ phase: 'apply', done, total: order.length });
      };
      for (const level of dependencyLevels(order)) {
        const byKind = new Map<BundleItemKind, number[]>();
        for (const i of level) {
          const plan = planned[i];
          if (plan.action === 'skip') {
            outcomes[i] = { result: 'skipped', reason: plan.reason, targetId: plan.targetId, secretsToRebind: plan.secretsToRebind };
            progressed(1);
          } else pushTo(byKind, order[i].kind, i);
        }
        for (const [kind, indexes] of byKind) {
          const provider = this.providers.get(kind)!;
          for (let start = 0; start < indexes.length; start += APPLY_BATCH) {
            const chunk = indexes.slice(start, start + APPLY_BATCH);
            const results = await this.applyBatch(provider, scope, chunk.map((i) => order[i]), m);
            chunk.forEach((i, k) => (outcomes[i] = results[k]));
            progressed(chunk.length);
          }
        }
      }
      const items: AppliedItem[] = order.map((item, n) => {
        const outcome = outcomes[n];
        const applied: AppliedItem = { ref: item.ref, kind: item.kind, action: outcome.result, result: outcome.result };
        if (outcome.reason) applied.reason = outcome.reason;
        if (outcome.targetId) applied.targetId = outcome.targetId;
        if (outcome.secretsToRebind?.length) applied.secretsToRebind = outcome.secretsToRebind;
        return applied;
      });
      const counts: ImportCounts = { created: 0, updated: 0, skipped: 0, failed: 0 };
      for (const i of items) counts[i.result]++;
      const secretsToRebind = unique(items.flatMap((i) => i.secretsToRebind ?? []));
      // Content-free: origin, counts and refs to re-bind only; in the import's transaction.
      await this.events.append(scope, HOST_STREAM, 'import.applied', { bundleOrigin: bundle.source.origin, counts, secretsToRebind }, { manager: m });
      await this.audit.record(m, {
        tenant: scope.tenant, workspace: scope.workspace, actor, action: 'import.applied', resource: { type: 'bundle', id: bundle.source.origin },
        details: { created: counts.created, updated: counts.updated, skipped: counts.skipped, failed: counts.failed, refs: order.map((i) => i.ref).slice(0, 100), toRebind: secretsToRebind },
      });
      const refs = order.map((i) => i.ref);
      return {
        dryRun: false,
        migrated: true,
        bundleVersion: SUPPORTED_BUNDLE_VERSION,
        bundleOrigin: bundle.source.origin,
        itemCount: items.length,
        order: refs,
        refs,
        items,
        counts,
        conflicts: [],
        secretsToRebind,
        imported: counts.created + counts.updated,
      };
    });
  }

  /**
   * Independent items of one kind, in the import transaction: through the provider's `applyMany`
   * when it has one (inside a savepoint), else item by item. A failing batch is rolled back to its
   * savepoint and replayed item by item, so the error names the failing item; either way the
   * import fails and its transaction rolls back.
   */
  private async applyBatch(provider: PortableKindProvider, scope: PortabilityScope, items: BundleItem[], m: EntityManager): Promise<PortableItemOutcome[]> {
    if (provider.applyMany && items.length > 1) {
      await m.query('SAVEPOINT "import_batch"');
      try {
        const results = await provider.applyMany(scope, items, m);
        if (results.length !== items.length) throw new ExtensionFault(`portable kind "${items[0].kind}" applied ${results.length} of ${items.length} items`);
        await m.query('RELEASE SAVEPOINT "import_batch"');
        return results;
      } catch (e) {
        await m.query('ROLLBACK TO SAVEPOINT "import_batch"');
        this.logger.warn({ msg: 'batch import failed; replaying it item by item', kind: items[0].kind, items: items.length, err: (e as Error).message });
      }
    }
    const out: PortableItemOutcome[] = [];
    for (const item of items) out.push(await this.applyItem(provider, scope, item, m));
    return out;
  }

  /** One item in the import transaction; a failure fails the import (the transaction rolls back). */
  private async applyItem(provider: PortableKindProvider, scope: PortabilityScope, item: BundleItem, m: EntityManager): Promise<PortableItemOutcome> {
    try {
      return await provider.apply(scope, item, m);
    } catch (e) {
      const cause = e instanceof DomainError ? { error: e.code, message: e.message, ...(e.details ? { details: e.details } : {}) } : { error: 'internal_error' };
      if (!(e instanceof DomainError)) this.logger.error({ msg: 'import of an item failed', ref: item.ref, kind: item.kind, err: (e as Error).message });
      throw new UnprocessableError('bundle_item_failed', `Item "${item.ref}" (${item.kind}) could not be imported; nothing was imported.`, { ref: item.ref, kind: item.kind, cause });
    }
  }
}

/**
 * The items (indexes into `order`, a topological order) grouped by dependency depth: an item's
 * level is one more than the deepest item it depends on, so the items of one level never depend on
 * each other and may be applied as one batch per kind, level after level.
 */
function dependencyLevels(order: readonly BundleItem[]): number[][] {
  const depth = new Map<string, number>();
  const levels: number[][] = [];
  order.forEach((item, i) => {
    const d = Math.max(-1, ...(item.dependsOn ?? []).map((r) => depth.get(r) ?? -1)) + 1;
    depth.set(item.ref, d);
    (levels[d] ??= []).push(i);
  });
  return levels;
}

function requireScope(p: Principal, scope: string): void {
  if (!p.scopes.has(scope)) throw new ForbiddenError(`The credential lacks the ${scope} scope.`, { requiredScopes: [scope], missingScopes: [scope] });
}

function toScope(p: Principal): PortabilityScope {
  return p.workspace ? { tenant: p.tenant, workspace: p.workspace, principal: p.principal } : { tenant: p.tenant, principal: p.principal };
}

function unique(values: string[]): string[] {
  return [...new Set(values)];
}
