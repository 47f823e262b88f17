import { Injectable } from '@nestjs/common';
import { InstalledArtifact, ToolDescriptor, ToolListingContext, ToolListingScope, ToolSource, ToolSourceProvider } from '@openwop-host/plugin-sdk';
import { ArtifactRegistryService } from '../../../platform/artifacts/artifact-registry.service';
import { NODE_PACK_KIND, WORKFLOW_CHAIN_PACK_KIND } from '../installers/pack-installers';
import { PackDirectory } from './pack-directory';
import { PackListingChanges } from './pack-listing-changes';
import { nodePackTools, workflowChainTools } from './pack-tools';

/**
 * Projected tools per artifact content ref (`sha256:` of the stored bytes): an unchanged pack
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

/**
 * A source projecting one pack kind of the registry for the tenant, plus the host-wide pack folder's
 * packs of that kind. Projections are cached per content hash.
 */
@Injectable()
abstract class RegistryPackToolSource implements ToolSourceProvider {
  protected abstract readonly kind: string;
  protected abstract readonly cache: ProjectionCache;
  /** The packs of this kind loaded from the folder at start, projected. */
  protected abstract directoryProjection(): ToolDescriptor[];
  private directoryTools?: ToolDescriptor[];

  constructor(
    private readonly registry: ArtifactRegistryService,
    protected readonly directory: PackDirectory,
    private readonly changes: PackListingChanges,
  ) {}

  subscribe(onChange: (scope?: ToolListingScope) => void): void {
    this.changes.on(this.kind, onChange);
  }

  async listTools(ctx: ToolListingContext): Promise<ToolDescriptor[]> {
    const installed = await this.registry.list({ tenant: ctx.tenant, workspace: ctx.workspace }, [this.kind]);
    this.directoryTools ??= this.directoryProjection();
    return [...this.directoryTools, ...this.cache.tools(installed)];
  }
}

/** `node-pack`: the node typeIds of the packs installed for the tenant, plus the host-wide pack folder. */
@Injectable()
@ToolSource({ source: 'node-pack', name: 'node-pack' })
export class NodePackToolSource extends RegistryPackToolSource {
  protected readonly kind = NODE_PACK_KIND;
  protected readonly cache = new ProjectionCache(nodePackTools);
  protected directoryProjection(): ToolDescriptor[] {
    return this.directory.nodePacks.flatMap((p) => nodePackTools(p.content));
  }
}

/** `workflow`: the chains of the workflow-chain packs installed for the tenant, plus the pack folder's. */
@Injectable()
@ToolSource({ source: 'workflow', name: 'workflow' })
export class WorkflowToolSource extends RegistryPackToolSource {
  protected readonly kind = WORKFLOW_CHAIN_PACK_KIND;
  protected readonly cache = new ProjectionCache(workflowChainTools);
  protected directoryProjection(): ToolDescriptor[] {
    return this.directory.workflowChainPacks.flatMap((p) => workflowChainTools(p.content));
  }
}
