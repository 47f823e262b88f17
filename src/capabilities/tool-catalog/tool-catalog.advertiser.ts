import { Injectable } from '@nestjs/common';
import { Advertiser, CapabilityAdvertiser } from '../../platform/discovery/capability-advertiser';
import { ToolCatalogService } from './tool-catalog.service';

/**
 * `toolCatalog` at the discovery root: the catalog, the compact view and session events are served;
 * `sources` lists only the kinds that currently project something.
 */
@Injectable()
@Advertiser()
export class ToolCatalogAdvertiser implements CapabilityAdvertiser {
  readonly scopedBy = { toolCatalog: ['tools:read'] };

  constructor(private readonly catalog: ToolCatalogService) {}

  async advertise(): Promise<Record<string, unknown>> {
    return {
      toolCatalog: {
        supported: true,
        sources: await this.catalog.projectingKinds(),
        sessionLifecycle: true,
        compactView: true,
      },
    };
  }
}
