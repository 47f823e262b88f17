import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Inject, Injectable, Logger } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import { HOST_CONFIG, HostConfig } from '../config/host-config';
import { HealthService } from '../health/health.service';
import { protocolVersions } from '../http/protocol-version';
import type { Principal } from '../identity/principal';
import { ROLES } from '../identity/scopes';
import { PROTOCOL_SCHEMAS } from '../openapi/protocol-schemas';
import { SCHEMAS_ROOT } from '../schemas/schema-registry';
import { Advertiser, CapabilityAdvertiser } from './capability-advertiser';
import { samlScimIssuers } from './v2-records/auth';
import { v2Root } from './v2-root';
import { PROJECT_ROOT } from '../project-root';

export const HOST_NAME = 'openwop-host';
export const HOST_VERSION: string = (JSON.parse(fs.readFileSync(path.join(PROJECT_ROOT, 'package.json'), 'utf8')) as { version: string }).version;

export function deepMerge(target: Record<string, unknown>, source: Record<string, unknown>): Record<string, unknown> {
  for (const [k, v] of Object.entries(source)) {
    const cur = target[k];
    if (v && typeof v === 'object' && !Array.isArray(v) && cur && typeof cur === 'object' && !Array.isArray(cur)) {
      deepMerge(cur as Record<string, unknown>, v as Record<string, unknown>);
    } else {
      target[k] = v;
    }
  }
  return target;
}

/** Root fields of the discovery document that are not capability families (not mirrored). */
const CORE_FIELDS = new Set(['protocolVersion', 'protocolVersions', 'preferredVersion', 'minClientVersion', 'supportedEnvelopes', 'schemaVersions', 'limits', 'implementation', 'supportedTransports', 'capabilities', 'eventLogSchemaVersion']);

/** Composes the discovery document from the advertisers of the modules that are actually mounted. */
@Injectable()
export class DiscoveryDocumentService {
  private readonly logger = new Logger('discovery');

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly health: HealthService,
    @Inject(HOST_CONFIG) private readonly config: HostConfig,
  ) {}

  private found?: CapabilityAdvertiser[];
  private readonly schemaVersions = protocolSchemaVersions();

  /** The advertisers are fixed once the application is built; they are looked up once. */
  private advertisers(): CapabilityAdvertiser[] {
    return (this.found ??= this.discovery
      .getProviders({ metadataKey: Advertiser.KEY })
      .map((w) => w.instance as CapabilityAdvertiser)
      .filter((i) => i && typeof i.advertise === 'function'));
  }

  /**
   * The discovery document: the whole public view, or, for a caller's principal, the auth-scoped
   * view (RFC 0011, same-endpoint): the same core fields and host-wide blocks, minus each block the
   * caller holds none of the scopes to use (its advertiser's `scopedBy`). A narrower credential thus
   * never learns more than a broader one, and no view has a block the public view lacks.
   */
  async document(principal?: Principal): Promise<{ body: Record<string, unknown>; etag: string }> {
    const doc: Record<string, unknown> = {
      protocolVersion: '1.0',
      // Additive in 1.x (versioning.md §1): the served majors, the preferred one and the client floor.
      ...protocolVersions(this.config.protocol.majors),
      supportedEnvelopes: [],
      schemaVersions: { ...this.schemaVersions },
      limits: { clarificationRounds: 0, schemaRounds: 0, envelopesPerTurn: 0, maxRequestBodyBytes: this.config.maxRequestBodyBytes },
      implementation: { name: HOST_NAME, version: HOST_VERSION },
      authorization: {
        supported: true,
        failClosed: true,
        roles: Object.entries(ROLES).map(([role, r]) => ({ role, scopes: [...r.scopes] })),
      },
      discovery: { authScoped: { supported: true, mode: 'same-endpoint' } },
    };
    for (const a of this.advertisers()) {
      // A failing advertiser drops only its own block (and says so in /readyz); discovery answers.
      const name = a.constructor?.name ?? 'advertiser';
      try {
        let part = await a.advertise();
        // A copy: an advertiser may hand out an object it keeps.
        if (part && principal && a.scopedBy) withoutUnusable((part = structuredClone(part)), a.scopedBy, principal);
        if (part) deepMerge(doc, part);
        this.health.clear(`discovery:${name}`);
      } catch (e) {
        this.logger.error({ msg: 'capability advertiser failed', advertiser: name, err: e });
        this.health.report(`discovery:${name}`, false, 'advertiser failed; its capability block is left out');
      }
    }
    const body = sortKeys(doc) as Record<string, unknown>;
    // Older readers (scenarios such as credential-payload-redaction, the reference loader) read the
    // families under the deprecated `capabilities` wrapper: the same blocks are mirrored there, so
    // both places always agree and one ETag covers both. `limits` is mirrored too (readers such as
    // run-execution-bounds-shape look for the RFC 0058 bounds at `capabilities.limits`).
    body.capabilities = Object.fromEntries(Object.keys(body).filter((k) => k === 'limits' || !CORE_FIELDS.has(k)).map((k) => [k, body[k]]));
    return { body, etag: etagOf(body) };
  }

  /** The v2 representation (OpenWOP-Version: 2): the closed root projected from the v1 document (v2-root.ts). */
  async v2Document(principal?: Principal, origin?: string): Promise<{ body: Record<string, unknown>; etag: string }> {
    const root = v2Root((await this.document(principal)).body, { origin, identityLanes: samlScimIssuers(this.config.identity) });
    // While the test seams are on, the v2 seams profile is claimed as metadata (spec v2 §11: no family, no root profiles[]).
    if (this.config.testSeams) root.conformance = { seamsProfile: 'openwop-conformance-seams-v2' };
    const body = sortKeys(root) as Record<string, unknown>;
    return { body, etag: etagOf(body) };
  }
}

/** The ETag of a representation: a hash of its JSON text. */
function etagOf(body: unknown): string {
  return `"${createHash('sha256').update(JSON.stringify(body)).digest('base64url').slice(0, 32)}"`;
}

/** Removes, in place, each dotted path of `part` whose scopes the principal holds none of (and parents left empty). */
export function withoutUnusable(part: Record<string, unknown>, scopedBy: Readonly<Record<string, readonly string[]>>, principal: Pick<Principal, 'scopes'>): void {
  for (const [path, scopes] of Object.entries(scopedBy)) {
    if (scopes.some((s) => principal.scopes.has(s))) continue;
    const keys = path.split('.');
    const parents: Array<Record<string, unknown>> = [part];
    let cur: unknown = part;
    for (const k of keys.slice(0, -1)) {
      cur = (cur as Record<string, unknown> | undefined)?.[k];
      if (!cur || typeof cur !== 'object') break;
      parents.push(cur as Record<string, unknown>);
    }
    if (parents.length !== keys.length) continue;
    delete parents[parents.length - 1][keys[keys.length - 1]];
    for (let i = parents.length - 1; i > 0; i--) {
      if (Object.keys(parents[i]).length) break;
      delete parents[i - 1][keys[i - 1]];
    }
  }
}

/** The published v1 schemas whose shapes the host serves (error envelope, run events, capability payloads). */
function protocolSchemaVersions(): Record<string, number> {
  const official = new Set(fs.readdirSync(path.join(SCHEMAS_ROOT, 'openwop')).map((f) => f.replace(/\.schema\.json$/, '')));
  const names = ['capabilities', ...Object.values(PROTOCOL_SCHEMAS)].filter((n) => official.has(n));
  return Object.fromEntries([...new Set(names)].sort().map((n) => [n, 1]));
}

export function sortKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sortKeys);
  if (v && typeof v === 'object') {
    return Object.fromEntries(Object.keys(v as object).sort().map((k) => [k, sortKeys((v as Record<string, unknown>)[k])]));
  }
  return v;
}
