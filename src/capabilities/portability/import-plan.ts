import type { BundleItem, BundleItemKind, PortabilityScope, PortableKindProvider, PortableViolation } from '@openwop-host/plugin-sdk';
import { ExportBundle, pushTo, SUPPORTED_BUNDLE_VERSION } from './bundle-checks';

/*
 * An import's plan (RFC 0098 §C): what each item of a bundle would do, the kinds' preparation before
 * they plan, the dry-run answer built from the planned items, and the refused items as the bundle's
 * problems. PortabilityService plans and applies with these.
 */

export type PlanAction = 'create' | 'update' | 'skip' | 'conflict';

export interface PlannedItem {
  ref: string;
  kind: BundleItemKind;
  action: PlanAction;
  reason: string;
  targetId?: string;
  secretsToRebind?: string[];
  violations?: PortableViolation[];
}

export interface PlanEntry {
  ref: string;
  kind: BundleItemKind;
  reason: string;
}

/** The dry-run answer (RFC 0098 §C plan, in the superset shape every known reader accepts). */
export interface ImportPlan {
  dryRun: true;
  migrated: false;
  bundleVersion: '1';
  bundleOrigin: string;
  itemCount: number;
  byKind: Record<string, number>;
  order: string[];
  items: PlannedItem[];
  creates: PlanEntry[];
  updates: PlanEntry[];
  skips: PlanEntry[];
  conflicts: PlanEntry[];
  counts: { create: number; update: number; skip: number; conflict: number };
  secretsToRebind: string[];
}

/**
 * Loads, before the import's transaction opens, what each kind's planning reads outside that transaction
 * (`PortableKindProvider.prepare`: for packs, the importer's tool catalog their install checks consult). On the
 * embedded engine, whose connections share one session, such a read made inside the transaction would wait behind it.
 */
export async function prepareKinds(providers: ReadonlyMap<BundleItemKind, PortableKindProvider>, scope: PortabilityScope, items: BundleItem[]): Promise<void> {
  const byKind = new Map<BundleItemKind, BundleItem[]>();
  for (const item of items) pushTo(byKind, item.kind, item);
  for (const [kind, ofKind] of byKind) {
    const provider = providers.get(kind);
    if (provider?.prepare && (provider.available?.() ?? true)) await provider.prepare(scope, ofKind);
  }
}

/** The dry-run answer of a planned bundle. */
export function planView(bundle: ExportBundle, order: BundleItem[], planned: PlannedItem[]): ImportPlan {
  const entry = (p: PlannedItem): PlanEntry => ({ ref: p.ref, kind: p.kind, reason: p.reason });
  const byKind: Record<string, number> = {};
  for (const i of bundle.items) byKind[i.kind] = (byKind[i.kind] ?? 0) + 1;
  const of = (a: PlanAction) => planned.filter((p) => p.action === a);
  return {
    dryRun: true,
    migrated: false,
    bundleVersion: SUPPORTED_BUNDLE_VERSION,
    bundleOrigin: bundle.source.origin,
    itemCount: bundle.items.length,
    byKind,
    order: order.map((i) => i.ref),
    items: planned,
    creates: of('create').map(entry),
    updates: of('update').map(entry),
    skips: of('skip').map(entry),
    conflicts: of('conflict').map(entry),
    counts: { create: of('create').length, update: of('update').length, skip: of('skip').length, conflict: of('conflict').length },
    secretsToRebind: [...new Set(planned.flatMap((p) => p.secretsToRebind ?? []))],
  };
}

/** The violations of refused items as `{path, code, message}`, `path` a JSON Pointer into the bundle (`/items/<i>/payload...`). */
export function bundleProblems(bundle: ExportBundle, refused: PlannedItem[]): Array<{ path: string; code: string; message: string }> {
  const index = new Map(bundle.items.map((item, i) => [item.ref, i]));
  const out: Array<{ path: string; code: string; message: string }> = [];
  for (const p of refused) {
    const base = `/items/${index.get(p.ref) ?? 0}`;
    const violations = p.violations?.length ? p.violations : [{ path: '', message: p.reason }];
    for (const v of violations) {
      const code = (v as { code?: unknown }).code;
      out.push({ path: `${base}/payload${v.path}`, code: typeof code === 'string' ? code : p.violations?.length ? 'invalid_item' : 'conflict', message: v.message });
    }
  }
  return out.slice(0, 500);
}
