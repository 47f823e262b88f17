import { Injectable } from '@nestjs/common';
import { Advertiser, CapabilityAdvertiser } from '../../platform/discovery/capability-advertiser';
import { WorkspaceService } from './workspace.service';

/**
 * `workspace {supported, versioned, maxFileBytes, maxFiles, maxVersions}` (RFC 0059 §A,
 * capabilities.schema.json), from the host's settings; nothing while the store is switched off.
 * Not hidden from credentials without the workspace scopes: the block is the store's ceilings, and
 * the official shape check reads it with a key that holds neither.
 */
@Injectable()
@Advertiser()
export class WorkspaceAdvertiser implements CapabilityAdvertiser {
  constructor(private readonly workspace: WorkspaceService) {}

  advertise(): Record<string, unknown> | undefined {
    const s = this.workspace.settings;
    if (!s.enabled) return undefined;
    return { workspace: { supported: true, versioned: true, maxFileBytes: s.maxFileBytes, maxFiles: s.maxFiles, maxVersions: s.maxVersions } };
  }
}
