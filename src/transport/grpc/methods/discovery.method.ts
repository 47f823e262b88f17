import { Injectable } from '@nestjs/common';
import { DiscoveryController } from '../../../platform/discovery/discovery.controller';
import { DiscoveryDocumentService } from '../../../platform/discovery/discovery.service';
import { EngineMethod, UnaryEngineMethod } from '../engine-method';

/** GetCapabilities: the `/.well-known/openwop` document, public and rate-limited per address like the REST route. */
@Injectable()
@EngineMethod()
export class GetCapabilitiesMethod implements UnaryEngineMethod {
  readonly name = 'GetCapabilities';
  readonly kind = 'unary';
  readonly rest = { controller: DiscoveryController, handler: 'document' };

  constructor(private readonly discovery: DiscoveryDocumentService) {}

  async handle(): Promise<unknown> {
    return (await this.discovery.document()).body;
  }
}
