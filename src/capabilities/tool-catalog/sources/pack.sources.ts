import { Injectable } from '@nestjs/common';
import { InstalledArtifact, ToolDescriptor, ToolListingContext, ToolListingScope, ToolSource, ToolSourceProvider } from '@openwop-host/plugin-sdk';
import { ArtifactRegistryService } from '../../../platform/artifacts/artifact-registry.service';
import { NODE_PACK_KIND, WORKFLOW_CHAIN_PACK_KIND } from '../installers/pack-installers';
import { PackDirectory } from './pack-directory';
import { PackListingChanges } from './pack-listing-changes';
import { nodePackTools, workflowChainTools } from './pack-tools';

/**
 * Projected tools per artifact content ref (`sha256:` of the canonical bytes): an unchanged pack
 * yields the very same descriptor objects on every refresh, so the catalog does no work for it.
 */
class ProjectionCache {
  private readonly byRef = new Map<string, ToolDescriptor[]>();

  constructor(private readonly project: (manifest: Record<string, unknown>) => ToolDescriptor[]) {}

  tools(artifacts: InstalledArtifact[]): ToolDescriptor[] {
    const out: ToolDescriptor[] = [];
    for (const a of artifacts) {
      let tools = this.byRef.get(a.ref);
      if (!tools) this.byRef.set(a.ref, (tools = this.project(a.content)));
      out.push(...tools);
    }
    // Bounded: forget everything when it grows past what any tenant set could reuse.
    if (this.byRef.size > 50_000) this.byRef.clear();
    return out;
  }
}

/** `node-pack`: the node typeIds of the packs installed for the tenant, plus the host-wide pack folder. */
@Injectable()
@ToolSource({ source: 'node-pack', name: 'node-pack' })
export class NodePackToolSource implements ToolSourceProvider {
  private readonly cache = new ProjectionCache(nodePackTools);
  private directoryTools?: ToolDescriptor[];

  constructor(
    private readonly registry: ArtifactRegistryService,
    private readonly directory: PackDirectory,
    private readonly changes: PackListingChanges,
  ) {}

  subscribe(onChange: (scope?: ToolListingScope) => void): void {
    this.changes.on(NODE_PACK_KIND, onChange);
  }

  async listTools(ctx: ToolListingContext): Promise<ToolDescriptor[]> {
    const installed = await this.registry.list({ tenant: ctx.tenant, workspace: ctx.workspace }, [NODE_PACK_KIND]);
    this.directoryTools ??= this.directory.nodePacks.flatMap((p) => nodePackTools(p.content));
    return [...this.directoryTools, ...this.cache.tools(installed)];
  }
}

/** `workflow`: the chains of the workflow-chain packs installed for the tenant, plus the pack folder's. */
@Injectable()
@ToolSource({ source: 'workflow', name: 'workflow' })
export class WorkflowToolSource implements ToolSourceProvider {
  private readonly cache = new ProjectionCache(workflowChainTools);
  private directoryTools?: ToolDescriptor[];

  constructor(
    private readonly registry: ArtifactRegistryService,
    private readonly directory: PackDirectory,
    private readonly changes: PackListingChanges,
  ) {}

  subscribe(onChange: (scope?: ToolListingScope) => void): void {
    this.changes.on(WORKFLOW_CHAIN_PACK_KIND, onChange);
  }

  async listTools(ctx: ToolListingContext): Promise<ToolDescriptor[]> {
    const installed = await this.registry.list({ tenant: ctx.tenant, workspace: ctx.workspace }, [WORKFLOW_CHAIN_PACK_KIND]);
    this.directoryTools ??= this.directory.workflowChainPacks.flatMap((p) => workflowChainTools(p.content));
    return [...this.directoryTools, ...this.cache.tools(installed)];
  }
}
