import { Injectable } from '@nestjs/common';
import { PortableKind } from '@openwop-host/plugin-sdk';
import { ArtifactBackedPortableKind } from './artifact-backed-portable-kind';

/** `prompt-template` items (RFC 0027), installed through the `prompt-template` artifact installer. */
@PortableKind({ kind: 'prompt-template' })
@Injectable()
export class PromptTemplatePortableKind extends ArtifactBackedPortableKind {
  protected readonly bundleKind = 'prompt-template' as const;
  protected readonly registryKinds = ['prompt-template'] as const;

  protected registryKindOf(): string {
    return 'prompt-template';
  }
}
