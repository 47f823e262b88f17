import { Injectable, OnModuleInit } from '@nestjs/common';
import { DiscoveryService, MetadataScanner, Reflector } from '@nestjs/core';
import { PUBLIC_KEY, SCOPES_KEY, SEAM_KEY } from './decorators';
import { WiringFault } from '../errors/internal-fault';

/** Refuses to start a host with a route that declares neither @Scopes nor @Public (fail closed). */
@Injectable()
export class RouteAudit implements OnModuleInit {
  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    private readonly reflector: Reflector,
  ) {}

  onModuleInit(): void {
    const offenders: string[] = [];
    for (const wrapper of this.discovery.getControllers()) {
      const { instance, metatype } = wrapper;
      if (!instance || !metatype) continue;
      const proto = Object.getPrototypeOf(instance) as object;
      for (const name of this.scanner.getAllMethodNames(proto)) {
        const handler = (proto as Record<string, unknown>)[name] as object;
        if (Reflect.getMetadata('path', handler) === undefined) continue;
        const targets = [handler as () => void, metatype];
        const declared =
          this.reflector.getAllAndOverride(SCOPES_KEY, targets) !== undefined ||
          this.reflector.getAllAndOverride(PUBLIC_KEY, targets) !== undefined ||
          this.reflector.getAllAndOverride(SEAM_KEY, targets) !== undefined;
        if (!declared) offenders.push(`${metatype.name}.${name}`);
      }
    }
    if (offenders.length) {
      throw new WiringFault(`routes without @Scopes() or @Public(): ${offenders.join(', ')}`);
    }
  }
}
