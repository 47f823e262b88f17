import { Injectable } from '@nestjs/common';

/** Tells listeners (the connector tool source's catalog cache) that a tenant's connections or packs changed. */
@Injectable()
export class ConnectionChangeNotifier {
  private readonly listeners = new Set<(tenant: string) => void>();

  subscribe(listener: (tenant: string) => void): void {
    this.listeners.add(listener);
  }

  changed(tenant: string): void {
    for (const l of this.listeners) l(tenant);
  }
}
