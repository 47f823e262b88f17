import { Injectable } from '@nestjs/common';

export interface ComponentHealth {
  ok: boolean;
  /** Human-readable reason when not ok (never a credential or a stack trace). */
  detail?: string;
  data?: Record<string, unknown>;
  since: string;
}

/**
 * Degradations reported by parts of the host (a tool source timing out, a plugin that failed to
 * load, a toolId collision). `/readyz` shows them; a degraded host still answers.
 */
@Injectable()
export class HealthService {
  private readonly components = new Map<string, ComponentHealth>();

  report(component: string, ok: boolean, detail?: string, data?: Record<string, unknown>): void {
    const prev = this.components.get(component);
    if (prev && prev.ok === ok && prev.detail === detail) {
      if (data) prev.data = data;
      return;
    }
    this.components.set(component, { ok, detail, data, since: new Date().toISOString() });
  }

  clear(component: string): void {
    this.components.delete(component);
  }

  snapshot(): Record<string, ComponentHealth> {
    return Object.fromEntries([...this.components.entries()].sort(([a], [b]) => a.localeCompare(b)));
  }

  degraded(): boolean {
    return [...this.components.values()].some((c) => !c.ok);
  }
}
