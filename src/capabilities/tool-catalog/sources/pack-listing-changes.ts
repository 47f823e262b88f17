import { Injectable } from '@nestjs/common';
import type { ToolListingScope } from '@openwop-host/plugin-sdk';

type Listener = (scope?: ToolListingScope) => void;

/**
 * Tells the pack-backed tool sources that a tenant's installed packs changed. The install runs in a
 * transaction that has not committed yet when the installer hook fires, so listeners are told now
 * and once more shortly after: a listing read in between (still seeing the old rows) is dropped too.
 */
@Injectable()
export class PackListingChanges {
  private readonly listeners = new Map<string, Set<Listener>>();

  on(kind: string, listener: Listener): void {
    let set = this.listeners.get(kind);
    if (!set) this.listeners.set(kind, (set = new Set()));
    set.add(listener);
  }

  changed(kind: string, scope?: ToolListingScope): void {
    const notify = () => {
      for (const l of this.listeners.get(kind) ?? []) l(scope ? { tenant: scope.tenant, workspace: scope.workspace } : undefined);
    };
    notify();
    setTimeout(notify, 250).unref();
  }
}
