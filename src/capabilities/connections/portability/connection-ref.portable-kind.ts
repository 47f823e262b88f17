import { Injectable } from '@nestjs/common';
import { BundleItem, PortabilityScope, PortableItemOutcome, PortableItemPlan, PortableItemRequirements, PortableKind, PortableKindProvider, PortableViolation } from '@openwop-host/plugin-sdk';
import { MANAGE_CONNECTIONS_SCOPE } from '../../../platform/identity/scopes';
import type { EntityManager } from 'typeorm';
import { CONNECTION_NAME } from '../connections.dto';
import { ConnectionsService } from '../connections/connections.service';
import { CONNECTION_PACK_KIND } from '../packs/connection-pack.installer';
import { ConnectionPacksService } from '../packs/connection-packs.service';

const PROVIDER_ID = /^[a-z][a-z0-9-]{0,127}$/;

interface ConnectionRefPayload {
  name: string;
  provider: string;
}

/**
 * `connection-ref` bundle items (RFC 0098): a connection travels as a reference only — its name,
 * provider and an opaque `credentialRef` placeholder, never the credential. Import creates the
 * connection re-owned to the importer WITHOUT a credential (listed in `secretsToRebind`), keyed on
 * (tenant, name) so a re-import never duplicates it.
 */
@PortableKind({ kind: 'connection-ref' })
@Injectable()
export class ConnectionRefPortableKind implements PortableKindProvider {
  constructor(
    private readonly connections: ConnectionsService,
    private readonly packs: ConnectionPacksService,
  ) {}

  /**
   * A connection whose provider resolves to an installed connection pack depends on that pack's
   * `pack` item (`connection-pack:<name>`), so an importer installs the pack first and the
   * reference resolves at the destination.
   */
  async export(scope: PortabilityScope): Promise<BundleItem[]> {
    const packOf = new Map<string, string | undefined>();
    const items: BundleItem[] = [];
    for (const c of await this.connections.list(scope)) {
      if (!packOf.has(c.provider)) {
        const r = await this.packs.resolve(scope, c.provider);
        packOf.set(c.provider, r.resolved && r.source === 'pack' ? r.packName : undefined);
      }
      const pack = packOf.get(c.provider);
      items.push({
        kind: 'connection-ref',
        ref: `connection:${c.name}`,
        dependsOn: pack ? [`${CONNECTION_PACK_KIND}:${pack}`] : [],
        payload: { name: c.name, provider: c.provider, kind: 'connection', scope: 'tenant', credentialRef: `[REDACTED:${c.id}]` },
      });
    }
    return items;
  }

  /** Creating a connection directly needs `connections:manage`; connections are tenant-wide. */
  async requiredScopes(): Promise<PortableItemRequirements> {
    return { scopes: [MANAGE_CONNECTIONS_SCOPE], tenantLevel: true };
  }

  async plan(scope: PortabilityScope, item: BundleItem, tx?: unknown): Promise<PortableItemPlan> {
    const violations = validatePayload(item.payload);
    const payload = referenceOf(item);
    if (!violations.length && !CONNECTION_NAME.test(payload.name)) violations.push({ path: '/name', message: 'no usable connection name (neither payload.name nor the item ref)' });
    if (violations.length) return { action: 'skip', reason: 'malformed connection reference', violations };
    const existing = await this.connections.findByName(scope, payload.name, tx as EntityManager | undefined);
    if (!existing) return { action: 'create', reason: 'new connection, without its credential', secretsToRebind: [payload.provider] };
    if (existing.provider !== payload.provider) {
      return { action: 'skip', reason: `a connection named "${payload.name}" already exists for provider "${existing.provider}"`, targetId: existing.id };
    }
    return {
      action: 'skip',
      reason: 'connection already exists',
      targetId: existing.id,
      secretsToRebind: existing.credentialBound ? [] : [payload.provider],
    };
  }

  async apply(scope: PortabilityScope, item: BundleItem, tx: unknown): Promise<PortableItemOutcome> {
    const payload = referenceOf(item);
    const r = await this.connections.importReference(scope, { name: payload.name, provider: payload.provider }, tx as EntityManager);
    return {
      result: r.created ? 'created' : 'skipped',
      reason: r.created ? 'created without its credential: bind one with PUT /v1/connections/{id}/credential' : 'connection already exists',
      targetId: r.id,
      secretsToRebind: r.needsRebind ? [payload.provider] : [],
    };
  }
}

/**
 * Name and provider of a reference. Bundles from other hosts may carry no `name` (only provider,
 * kind, scope and a credentialRef): the item's bundle ref, made a valid name, stands in for it.
 * Other payload keys are ignored (the host's import pipeline has already refused credential values).
 */
function referenceOf(item: BundleItem): ConnectionRefPayload {
  const p = item.payload;
  const name = typeof p.name === 'string' ? p.name : item.ref.replace(/[^A-Za-z0-9._ -]/g, '-').replace(/^[^A-Za-z0-9]+/, '').slice(0, 128);
  return { name, provider: String(p.provider) };
}

function validatePayload(payload: Record<string, unknown>): PortableViolation[] {
  const v: PortableViolation[] = [];
  if (payload.name !== undefined && (typeof payload.name !== 'string' || !CONNECTION_NAME.test(payload.name))) v.push({ path: '/name', message: 'must be a connection name' });
  if (typeof payload.provider !== 'string' || !PROVIDER_ID.test(payload.provider)) v.push({ path: '/provider', message: 'must be a provider id' });
  return v;
}
