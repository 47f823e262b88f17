import { Injectable } from '@nestjs/common';
import { ArtifactInstaller, ArtifactInstallerProvider, ArtifactViolation } from '@openwop-host/plugin-sdk';
import { SchemaRegistry } from '../../../platform/schemas/schema-registry';

/**
 * Installs RFC 0027 prompt templates into the pack registry, where the prompt-template routes
 * resolve them. Registry name = `templateId` (a newer version replaces the older one).
 */
@Injectable()
@ArtifactInstaller({ kind: 'prompt-template' })
export class PromptTemplateInstaller implements ArtifactInstallerProvider {
  validate(content: Record<string, unknown>): ArtifactViolation[] {
    return SchemaRegistry.shared()
      .validate('prompt-template', content)
      .map((v) => ({ path: v.path, message: v.message }));
  }

  identify(content: Record<string, unknown>): { name: string; version?: string } {
    return { name: String(content.templateId), version: typeof content.version === 'string' ? content.version : undefined };
  }
}
