import { Injectable } from '@nestjs/common';
import {
  ArtifactInstaller,
  ArtifactInstallerProvider,
  ArtifactViolation,
  InstalledArtifact,
  InstallScope,
} from '@openwop-host/plugin-sdk';
import { SchemaRegistry } from '../../../platform/schemas/schema-registry';
import { PackListingChanges } from '../sources/pack-listing-changes';

export const NODE_PACK_KIND = 'node-pack';
export const WORKFLOW_CHAIN_PACK_KIND = 'workflow-chain-pack';

/** Violations of a node-pack manifest: the schema, plus unique typeIds within the pack. */
export function nodePackViolations(content: Record<string, unknown>, schemas = SchemaRegistry.shared()): ArtifactViolation[] {
  const out: ArtifactViolation[] = schemas.validate('node-pack-manifest', content).map((v) => ({ path: v.path, message: v.message }));
  const nodes = Array.isArray(content.nodes) ? (content.nodes as Array<{ typeId?: unknown }>) : [];
  const seen = new Set<unknown>();
  nodes.forEach((n, i) => {
    if (n && seen.has(n.typeId)) out.push({ path: `/nodes/${i}/typeId`, message: 'must be unique within the pack' });
    seen.add(n?.typeId);
  });
  return out;
}

/** Violations of a workflow-chain-pack manifest: the schema, plus unique chainIds within the pack. */
export function workflowChainPackViolations(content: Record<string, unknown>, schemas = SchemaRegistry.shared()): ArtifactViolation[] {
  const out: ArtifactViolation[] = schemas.validate('workflow-chain-pack-manifest', content).map((v) => ({ path: v.path, message: v.message }));
  const chains = Array.isArray(content.chains) ? (content.chains as Array<{ chainId?: unknown }>) : [];
  const seen = new Set<unknown>();
  chains.forEach((c, i) => {
    if (c && seen.has(c.chainId)) out.push({ path: `/chains/${i}/chainId`, message: 'must be unique within the pack' });
    seen.add(c?.chainId);
  });
  return out;
}

function identify(content: Record<string, unknown>): { name: string; version?: string } {
  return { name: String(content.name), version: typeof content.version === 'string' ? content.version : undefined };
}

/**
 * Installer of `node-pack` artifacts (node packs and agent packs) into the pack registry. Installing
 * or removing one refreshes the tenant's `node-pack` tool listing on this replica at once (other
 * replicas within the catalog cache TTL).
 */
@Injectable()
@ArtifactInstaller({ kind: NODE_PACK_KIND })
export class NodePackInstaller implements ArtifactInstallerProvider {
  constructor(private readonly changes: PackListingChanges) {}

  validate(content: Record<string, unknown>): ArtifactViolation[] {
    return nodePackViolations(content);
  }

  identify(content: Record<string, unknown>): { name: string; version?: string } {
    return identify(content);
  }

  async afterInstall(_artifact: InstalledArtifact, scope: InstallScope): Promise<void> {
    this.changes.changed(NODE_PACK_KIND, scope);
  }

  async afterUninstall(_artifact: InstalledArtifact, scope: InstallScope): Promise<void> {
    this.changes.changed(NODE_PACK_KIND, scope);
  }
}

/** Installer of `workflow-chain-pack` artifacts; their chains are projected as `workflow` tools. */
@Injectable()
@ArtifactInstaller({ kind: WORKFLOW_CHAIN_PACK_KIND })
export class WorkflowChainPackInstaller implements ArtifactInstallerProvider {
  constructor(private readonly changes: PackListingChanges) {}

  validate(content: Record<string, unknown>): ArtifactViolation[] {
    return workflowChainPackViolations(content);
  }

  identify(content: Record<string, unknown>): { name: string; version?: string } {
    return identify(content);
  }

  async afterInstall(_artifact: InstalledArtifact, scope: InstallScope): Promise<void> {
    this.changes.changed(WORKFLOW_CHAIN_PACK_KIND, scope);
  }

  async afterUninstall(_artifact: InstalledArtifact, scope: InstallScope): Promise<void> {
    this.changes.changed(WORKFLOW_CHAIN_PACK_KIND, scope);
  }
}
