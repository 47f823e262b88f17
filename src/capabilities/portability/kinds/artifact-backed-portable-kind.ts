import { Injectable, Optional } from '@nestjs/common';
import { readEach } from '../../../platform/database/connection-reads';
import type {
  BundleItem,
  BundleItemKind,
  InstalledArtifact,
  PortabilityScope,
  PortableItemOutcome,
  PortableItemPlan,
  PortableItemRequirements,
  PortableKindProvider,
} from '@openwop-host/plugin-sdk';
import type { EntityManager } from 'typeorm';
import { ArtifactRegistryService, artifactRef } from '../../../platform/artifacts/artifact-registry.service';
import { InstallChecks } from '../../../platform/artifacts/install-checks';

/**
 * The scope of an import: the importer's, with its scopes (what its tool catalog shows), for the
 * install checks of what it imports (a chain calling a tool the importer cannot use is refused).
 */
export type ImportingScope = PortabilityScope & { installerScopes?: ReadonlySet<string> };

/** What installing a registry artifact directly (applying its proposal) requires. */
export const PUBLISH_SCOPE = 'packs:publish';

/** Registry `origin` of everything an import installs. */
export const IMPORT_ORIGIN = 'import';

/**
 * A bundle item kind whose entities live in the pack registry (packs, prompt templates,
 * automations). Import goes through the same artifact installers as proposal activation, so an
 * imported artifact is validated, stored byte-exact and activated exactly like an applied one.
 * Idempotency comes from the registry's unique (tenant, workspace, kind, name) index.
 */
@Injectable() // so the constructor's parameter types are emitted for the subclasses' injection
export abstract class ArtifactBackedPortableKind implements PortableKindProvider {
  protected abstract readonly bundleKind: BundleItemKind;
  /** The registry kinds this bundle kind covers. */
  protected abstract readonly registryKinds: readonly string[];

  constructor(
    protected readonly registry: ArtifactRegistryService,
    // Optional for subclasses written against the one-argument constructor (their kinds then have no install checks).
    @Optional() protected readonly checks?: InstallChecks,
  ) {}

  /** The registry kind an item installs into. */
  protected abstract registryKindOf(payload: Record<string, unknown>): string;

  /**
   * The scope an item of registry kind `kind` is installed in. Default: the importer's scope.
   * Tenant-wide kinds (connection packs) drop the workspace.
   */
  protected scopeFor(_kind: string, scope: PortabilityScope): PortabilityScope {
    return scope;
  }

  /** True when `contentFor` reads the destination's current artifact (apply then looks it up). */
  protected readonly contentDependsOnExisting: boolean = false;

  /** The content to install for a payload, given what the destination already holds. */
  protected contentFor(payload: Record<string, unknown>, _existing: InstalledArtifact | undefined): Record<string, unknown> {
    return payload;
  }

  /**
   * Installing an artifact directly (applying a proposal) needs `packs:publish`; an artifact that acts
   * later (an automation) also needs what its installer says it will act with.
   */
  async requiredScopes(scope: PortabilityScope, item: BundleItem): Promise<PortableItemRequirements> {
    const kind = this.registryKindOf(item.payload);
    if (!this.registry.hasKind(kind)) return { scopes: [PUBLISH_SCOPE] };
    const target = this.scopeFor(kind, scope);
    return { scopes: [PUBLISH_SCOPE], delegated: await this.registry.requiredScopes(kind, this.contentFor(item.payload, undefined), target) };
  }

  available(): boolean {
    return this.registryKinds.some((k) => this.registry.hasKind(k));
  }

  async export(scope: PortabilityScope): Promise<BundleItem[]> {
    const kinds = this.registryKinds.filter((k) => this.registry.hasKind(k));
    if (!kinds.length) return [];
    const artifacts = await this.registry.list(scope, kinds);
    // A workspace artifact shadows a tenant-wide one of the same name: both would land on the same
    // name in the importer's scope.
    const chosen = new Map<string, InstalledArtifact>();
    for (const a of artifacts) {
      const key = `${a.kind}:${a.name}`;
      const prev = chosen.get(key);
      if (!prev || (!prev.workspace && a.workspace)) chosen.set(key, a);
    }
    return [...chosen.values()].map((a) => ({ kind: this.bundleKind, ref: `${a.kind}:${a.name}`, dependsOn: [], payload: a.content }));
  }

  /** What the install checks of the items' registry kinds read outside the import's transaction (the tool catalog), loaded. */
  async prepare(scope: PortabilityScope, items: BundleItem[]): Promise<void> {
    const installer = (scope as ImportingScope).installerScopes;
    if (!installer || !this.checks) return;
    const kinds = new Set(items.map((item) => this.registryKindOf(item.payload)));
    for (const kind of kinds) {
      if (!this.registry.hasKind(kind)) continue;
      const target = this.scopeFor(kind, scope);
      await this.checks.prepare(kind, { tenant: target.tenant, workspace: target.workspace, principal: scope.principal, scopes: installer });
    }
  }

  async plan(scope: PortabilityScope, item: BundleItem, tx?: unknown): Promise<PortableItemPlan> {
    return (await this.planMany(scope, [item], tx))[0];
  }

  /** Plans many items with one registry read per registry kind (large bundles). */
  async planMany(scope: PortabilityScope, items: BundleItem[], tx?: unknown): Promise<PortableItemPlan[]> {
    const manager = tx as EntityManager | undefined;
    // Inside the import's transaction the probes' reads share its one connection (readEach).
    const probes = await readEach(manager, items, (item) => this.probe(scope, item, manager));
    const kinds = [...new Set(probes.flatMap((p) => ('name' in p ? [p.kind] : [])))];
    const existing = new Map<string, InstalledArtifact>();
    if (kinds.length) {
      // `list` also returns the tenant-wide artifacts to a workspace caller; an import writes only
      // into the caller's own workspace key, so only those rows can be replaced.
      for (const a of await this.registry.list(scope, kinds, manager)) {
        if ((a.workspace ?? undefined) === (this.scopeFor(a.kind, scope).workspace ?? undefined)) existing.set(`${a.kind}:${a.name}`, a);
      }
    }
    return items.map((item, i) => {
      const probe = probes[i];
      if (!('name' in probe)) return probe.plan;
      const { kind, name } = probe;
      const targetKey = `${kind}:${name}`;
      const current = existing.get(targetKey);
      if (!current) return { action: 'create', reason: `A new ${kind} "${name}" will be installed.`, targetKey };
      if (artifactRef(this.contentFor(item.payload, current)) === current.ref) {
        return { action: 'skip', reason: `The identical ${kind} "${name}" is already installed.`, targetKey, targetId: current.id };
      }
      return { action: 'update', reason: `The installed ${kind} "${name}" will be replaced by the bundle's content.`, targetKey, targetId: current.id };
    });
  }

  /** The registry kind and name of an item, or the refusal that stops it. */
  private async probe(scope: PortabilityScope, item: BundleItem, manager: EntityManager | undefined): Promise<{ kind: string; name: string } | { plan: PortableItemPlan }> {
    const kind = this.registryKindOf(item.payload);
    if (!this.registry.hasKind(kind)) {
      return { plan: { action: 'skip', reason: `This host has no installer for "${kind}".`, violations: [{ path: '', message: `no installer for artifact kind "${kind}"` }] } };
    }
    const content = this.contentFor(item.payload, undefined);
    const violations = await this.registry.validate(kind, content);
    if (violations.length) return { plan: { action: 'skip', reason: `The payload is malformed for "${kind}".`, violations } };
    const name = this.registry.identify(kind, content)?.name;
    if (!name) return { plan: { action: 'skip', reason: `The installer of "${kind}" cannot name the payload.`, violations: [{ path: '', message: 'unnamed artifact' }] } };
    const conflicts = await this.registry.preflight(kind, content, this.scopeFor(kind, scope), manager);
    // What this host could not run (unknown node types, tools the importer's catalog lacks, broken DAGs), every problem of it.
    const installer = (scope as ImportingScope).installerScopes;
    const target = this.scopeFor(kind, scope);
    const problems = installer && this.checks ? await this.checks.problems(kind, content, { tenant: target.tenant, workspace: target.workspace, principal: scope.principal, scopes: installer }, manager) : [];
    const refused = [...conflicts, ...problems];
    if (refused.length) return { plan: { action: 'skip', reason: `The ${kind} "${name}" cannot be installed here: ${refused[0].path ? `${refused[0].path}: ` : ''}${refused[0].message}`, violations: refused } };
    return { kind, name };
  }

  /**
   * Batch apply: one registry `installMany` per registry kind of the batch (one INSERT for the new
   * artifacts, one locking SELECT and one UPDATE for the existing ones), instead of statements per item.
   */
  async applyMany(scope: PortabilityScope, items: BundleItem[], tx: unknown): Promise<PortableItemOutcome[]> {
    if (this.apply !== ArtifactBackedPortableKind.prototype.apply) {
      // A subclass that customizes `apply` keeps its per-item behaviour.
      const out: PortableItemOutcome[] = [];
      for (const item of items) out.push(await this.apply(scope, item, tx));
      return out;
    }
    const manager = tx as EntityManager;
    const outcomes = new Array<PortableItemOutcome>(items.length);
    const byKind = new Map<string, number[]>();
    items.forEach((item, i) => {
      const kind = this.registryKindOf(item.payload);
      const list = byKind.get(kind);
      if (list) list.push(i);
      else byKind.set(kind, [i]);
    });
    for (const [kind, indexes] of byKind) {
      const target = this.scopeFor(kind, scope);
      let existing = new Map<string, InstalledArtifact>();
      if (this.contentDependsOnExisting) {
        const rows = await this.registry.list(target, [kind], manager);
        existing = new Map(rows.filter((a) => (a.workspace ?? undefined) === (target.workspace ?? undefined)).map((a) => [a.name, a]));
      }
      const contents = indexes.map((i) => {
        const payload = items[i].payload;
        if (!this.contentDependsOnExisting) return { content: this.contentFor(payload, undefined) };
        const name = this.registry.identify(kind, this.contentFor(payload, undefined))?.name;
        return { content: this.contentFor(payload, name ? existing.get(name) : undefined) };
      });
      const results = await this.registry.installMany(kind, contents, target, IMPORT_ORIGIN, manager);
      indexes.forEach((itemIndex, k) => {
        const { artifact, outcome } = results[k];
        outcomes[itemIndex] = { result: outcome === 'unchanged' ? 'skipped' : outcome, targetId: artifact.id, reason: `${kind} "${artifact.name}" ${outcome}` };
      });
    }
    return outcomes;
  }

  async apply(scope: PortabilityScope, item: BundleItem, tx: unknown): Promise<PortableItemOutcome> {
    const manager = tx as EntityManager;
    const kind = this.registryKindOf(item.payload);
    // Only kinds whose content depends on the destination's current state pay for the lookup.
    const name = this.contentDependsOnExisting ? this.registry.identify(kind, this.contentFor(item.payload, undefined))?.name : undefined;
    const target = this.scopeFor(kind, scope);
    const existing = name ? await this.registry.get(target, kind, name, manager) : undefined;
    const { artifact, outcome } = await this.registry.install(kind, this.contentFor(item.payload, existing), target, IMPORT_ORIGIN, manager);
    const result = outcome === 'unchanged' ? 'skipped' : outcome;
    return { result, targetId: artifact.id, reason: `${kind} "${artifact.name}" ${outcome}` };
  }
}
