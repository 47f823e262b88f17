import type { BundleItem, BundleItemKind, PortabilityScope, PortableKindProvider } from '@openwop-host/plugin-sdk';
import { pushTo } from './bundle-checks';

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
