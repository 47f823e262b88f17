import { Injectable } from '@nestjs/common';
import { InstalledArtifact, PortableKind } from '@openwop-host/plugin-sdk';
import { ArtifactBackedPortableKind } from './artifact-backed-portable-kind';

/**
 * `schedule` items: automations (named scheduled jobs) in the pack registry. A bundle must not
 * start firing triggers the moment it lands, so a new schedule is imported with `enabled: false`;
 * re-importing keeps whatever `enabled` the destination's operator has set since.
 */
@PortableKind({ kind: 'schedule' })
@Injectable()
export class SchedulePortableKind extends ArtifactBackedPortableKind {
  protected readonly bundleKind = 'schedule' as const;
  protected readonly registryKinds = ['automation'] as const;
  protected readonly contentDependsOnExisting = true;

  protected registryKindOf(): string {
    return 'automation';
  }

  protected contentFor(payload: Record<string, unknown>, existing: InstalledArtifact | undefined): Record<string, unknown> {
    const enabled = existing?.content.enabled === true;
    return { ...payload, enabled };
  }
}
