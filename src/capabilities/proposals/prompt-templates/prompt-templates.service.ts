import { Injectable } from '@nestjs/common';
import { ArtifactRegistryService } from '../../../platform/artifacts/artifact-registry.service';
import { NotFoundError } from '../../../platform/errors/domain-error';
import type { TenantScope } from '../../../platform/identity/principal';

export interface ResolvedPromptTemplate {
  template: Record<string, unknown>;
  ref: string;
  origin: string;
}

/**
 * Resolves installed prompt templates. Only the pack registry is read: a template that is merely
 * proposed (a draft) is never resolvable.
 */
@Injectable()
export class PromptTemplatesService {
  constructor(private readonly registry: ArtifactRegistryService) {}

  async list(scope: TenantScope): Promise<ResolvedPromptTemplate[]> {
    if (!this.registry.hasKind('prompt-template')) return [];
    const all = await this.registry.list(scope, ['prompt-template']);
    // A workspace's own template shadows the tenant-wide one of the same id.
    const byId = new Map<string, ResolvedPromptTemplate>();
    for (const a of all.sort((x, y) => Number(!!x.workspace) - Number(!!y.workspace))) {
      byId.set(a.name, { template: a.content, ref: a.ref, origin: a.origin });
    }
    return [...byId.values()].sort((a, b) => String(a.template.templateId).localeCompare(String(b.template.templateId)));
  }

  async resolve(scope: TenantScope, templateId: string, version?: string): Promise<ResolvedPromptTemplate> {
    const found = (await this.list(scope)).find((t) => t.template.templateId === templateId);
    if (!found || (version !== undefined && found.template.version !== version)) throw new NotFoundError('No such prompt template.');
    return found;
  }
}
