import { Injectable } from '@nestjs/common';

/** The advertised capability flags the capability-toggle test seam may switch off (and on again). */
export const TOGGLEABLE = ['subWorkflow.inputMapping'] as const;
export type Toggleable = (typeof TOGGLEABLE)[number];

/**
 * The capability-toggle overlay of the test seam `POST /v1/host/sample/test/capability-toggle`
 * (conformance `lib/host-toggle.ts`): a flag switched off here is advertised `false` and its
 * behaviour refused as a host without it refuses it (`subWorkflow.inputMapping`: a chain carrying a
 * non-empty `inputMapping` is refused at registration and not executed). This process's own, test
 * seams only; every flag is on (what the host implements) until the seam changes it.
 */
@Injectable()
export class CapabilityToggles {
  private readonly overlay = new Map<Toggleable, boolean>();

  enabled(name: Toggleable): boolean {
    return this.overlay.get(name) ?? true;
  }

  /** Sets (a boolean) or clears (null) a flag; false for a name the seam does not know with a value to set. */
  set(name: string, value: boolean | null): boolean {
    const known = (TOGGLEABLE as readonly string[]).includes(name);
    if (value === null) {
      if (known) this.overlay.delete(name as Toggleable);
      return true;
    }
    if (!known) return false;
    this.overlay.set(name as Toggleable, value);
    return true;
  }

  reset(): void {
    this.overlay.clear();
  }

  snapshot(): Record<string, boolean> {
    return Object.fromEntries(this.overlay);
  }
}

/** True when a DAG has a `core.subWorkflow` node whose `inputMapping` is not empty (what the flag gates). */
export function usesInputMapping(dag: unknown): boolean {
  const nodes = dag && typeof dag === 'object' && Array.isArray((dag as { nodes?: unknown }).nodes) ? ((dag as { nodes: unknown[] }).nodes) : [];
  return nodes.some((n) => {
    const node = n as { typeId?: unknown; config?: { inputMapping?: unknown } } | null;
    if (!node || (node.typeId !== 'core.subWorkflow' && node.typeId !== 'core.control.subWorkflow')) return false;
    const m = node.config?.inputMapping;
    return !!m && typeof m === 'object' && Object.keys(m).length > 0;
  });
}
