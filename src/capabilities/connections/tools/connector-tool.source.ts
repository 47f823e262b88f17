import { Injectable } from '@nestjs/common';
import { ConnectionProviderDefinition, ToolDescriptor, ToolListingContext, ToolListingScope, ToolSource, ToolSourceProvider } from '@openwop-host/plugin-sdk';
import { ConnectionChangeNotifier } from '../connection-change-notifier';
import { ConnectionsService } from '../connections/connections.service';
import { ConnectionPacksService } from '../packs/connection-packs.service';
import { InternalFault } from '../../../platform/errors/internal-fault';

/**
 * The actions a provider offers, as declared by its definition. A connection pack declares no
 * operation list; what it does declare is its consent groups (RFC 0095 §B.4): each read group is a
 * read action and each write group a write action over the provider's API, exercised through the
 * tenant's credential. A provider without groups offers one coarse `access` action, classified
 * `write` (unclassified actions are never assumed read-only).
 */
export function connectorActions(provider: ConnectionProviderDefinition): ToolDescriptor[] {
  const reach = Object.keys(provider.reach)[0];
  const via = reach === 'mcp' ? 'its MCP server' : reach === 'openapi' ? 'its OpenAPI surface' : 'its integration node';
  const groups = [
    ...(provider.auth.scopes?.read ?? []).map((g) => ({ g, access: 'read' as const })),
    ...(provider.auth.scopes?.write ?? []).map((g) => ({ g, access: 'write' as const })),
  ];
  if (!groups.length) {
    return [
      {
        toolId: `connector:${provider.id}.access`,
        source: 'connector',
        title: `${provider.displayName}: access`,
        description: `Use ${provider.displayName} through ${via} with the tenant's connection.`,
        auth: { credentialRef: true },
        egress: 'host-mediated',
        approval: 'conditional',
        replayPolicy: 'non-deterministic',
        safetyTier: 'write',
      },
    ];
  }
  const seen = new Set<string>();
  const out: ToolDescriptor[] = [];
  for (const { g, access } of groups) {
    const toolId = `connector:${provider.id}.${g.key}`;
    // A key listed under both read and write is one action; the write classification wins.
    if (seen.has(toolId)) {
      if (access === 'write') Object.assign(out.find((d) => d.toolId === toolId)!, { safetyTier: 'write', approval: 'conditional', replayPolicy: 'non-deterministic' });
      continue;
    }
    seen.add(toolId);
    out.push({
      toolId,
      source: 'connector',
      title: `${provider.displayName}: ${g.label}`,
      description: `${access === 'read' ? 'Read' : 'Write'} access to ${provider.displayName} (${g.label}) through ${via}, with the tenant's connection.`,
      auth: { credentialRef: true },
      egress: 'host-mediated',
      approval: access === 'read' ? 'never' : 'conditional',
      replayPolicy: access === 'read' ? 'idempotent' : 'non-deterministic',
      safetyTier: access,
    });
  }
  return out;
}

/**
 * The tool catalog's `connector` source: the actions of the providers the tenant has a usable
 * connection to (credential bound or an active OAuth grant, provider resolving), as `connector:<provider>.<action>`.
 * Descriptors carry only `auth.credentialRef: true`, never a credential or a reference value.
 */
@Injectable()
@ToolSource({ source: 'connector', name: 'openwop-host.connections' })
export class ConnectorToolSource implements ToolSourceProvider {
  constructor(
    private readonly connections: ConnectionsService,
    private readonly packs: ConnectionPacksService,
    private readonly notifier: ConnectionChangeNotifier,
  ) {}

  /** Advertised in discovery only while some connection can actually be used. */
  projects(): Promise<boolean> {
    return this.connections.anyUsable();
  }

  async listTools(ctx: ToolListingContext): Promise<ToolDescriptor[]> {
    const scope = { tenant: ctx.tenant };
    const providerIds = await this.connections.usableProviders(scope);
    const out: ToolDescriptor[] = [];
    for (const id of providerIds) {
      if (ctx.signal.aborted) throw new InternalFault('aborted', 'connector listing aborted');
      const r = await this.packs.resolve(scope, id);
      if (r.resolved && r.provider) out.push(...connectorActions(r.provider));
    }
    return out;
  }

  subscribe(onChange: (scope?: ToolListingScope) => void): void {
    // Connections and packs are tenant-wide: a scope without a workspace covers all of the tenant's.
    // Other replicas see the change when their cached listing expires.
    this.notifier.subscribe((tenant) => onChange({ tenant }));
  }
}
