import { createHash } from 'node:crypto';
import { Inject, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import {
  TOOL_SOURCE_KINDS,
  ToolDescriptor,
  ToolListingScope,
  ToolSource,
  ToolSourceKind,
  ToolSourceProvider,
  ToolSourceMeta,
  ToolSession,
} from '@openwop-host/plugin-sdk';
import { collectExtensions } from '../../platform/plugins/extension-registry';
import { NotFoundError, UnprocessableError } from '../../platform/errors/domain-error';
import { HealthService } from '../../platform/health/health.service';
import type { Principal, TenantScope } from '../../platform/identity/principal';
import { CompactToolDescriptor, toCompact } from './compact-descriptor';
import { compareToolIds, descriptorProblems, visibleTo } from './descriptor-rules';
import { toV2Descriptor } from './v2-descriptor';
import { TOOL_CATALOG_SETTINGS, ToolCatalogSettings } from './tool-catalog.config';
import { ExtensionFault } from '../../platform/errors/internal-fault';

/** The clock cache expiry is measured on (a seam for tests: TTL behaviour without waiting). */
@Injectable()
export class CatalogClock {
  now(): number {
    return Date.now();
  }
}

export interface RegisteredToolSource {
  name: string;
  kind: ToolSourceKind;
  provider: ToolSourceProvider;
  ttlMs: number;
  hostWide: boolean;
}

export interface CatalogEntry {
  descriptor: ToolDescriptor;
  source: RegisteredToolSource;
}

interface Listing {
  entries: CatalogEntry[];
  expiresAt: number;
}

interface Snapshot {
  /** Sorted by toolId (code-unit order), valid and collision-free. */
  entries: CatalogEntry[];
  /** The listings (per source, in source order) it was built from: unchanged listings reuse it. */
  parts: CatalogEntry[][];
  byId: Map<string, CatalogEntry>;
  /** Every scope some tool requires: a principal's view depends only on which of these it holds. */
  relevantScopes: string[];
  expiresAt: number;
  /** Pre-serialized response bodies per (held relevant scopes, view, source filter). */
  bodies: Map<string, SerializedCatalog>;
}

export type CatalogView = 'standard' | 'compact';

/** A response body encoded once (UTF-8 JSON) and its strong ETag. */
export interface SerializedCatalog {
  body: Buffer;
  etag: string;
}

export interface ListOptions {
  view?: CatalogView;
  source?: ToolSourceKind;
  /** The protocol major of the answer: 2 adds RFC 0204 `annotations` to standard-view descriptors (v2-descriptor.ts). */
  major?: number;
}

const MAX_BODIES_PER_SNAPSHOT = 256;
/** A failed listing is retried no sooner than this (so a dead source does not slow every request). */
const FAILURE_BACKOFF_MS = 5_000;

class SourceTimeoutError extends Error {}

/**
 * The tool catalog: merges the listings of every tool source (built-in and plugin), keeps only
 * descriptors that validate, refuses toolId collisions loudly, and serves each principal the tools
 * whose `auth.scopes` it holds. Listings are cached per replica and per tenant/workspace with a TTL;
 * response bodies are serialized once per distinct view and reused.
 */
@Injectable()
export class ToolCatalogService implements OnApplicationBootstrap {
  private readonly log = new Logger('ToolCatalog');
  private sources: RegisteredToolSource[] = [];
  private readonly listings = new Map<string, Listing>();
  private readonly listingsInFlight = new Map<string, Promise<Listing>>();
  private readonly snapshots = new Map<string, Snapshot>();
  private readonly snapshotsInFlight = new Map<string, Promise<Snapshot>>();
  private readonly collisions = new Map<string, Array<{ toolId: string; sources: string[] }>>();
  /**
   * Descriptor objects already validated (sources hand back the same objects for unchanged tools,
   * so a refresh costs no re-validation; the SDK contract says descriptors are never mutated).
   */
  private readonly validated = new WeakMap<object, CatalogEntry>();
  /** Bumped on every invalidation so an in-flight fetch started before it is not cached after it. */
  private generation = 0;

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly health: HealthService,
    private readonly clock: CatalogClock,
    @Inject(TOOL_CATALOG_SETTINGS) private readonly settings: ToolCatalogSettings,
  ) {}

  onApplicationBootstrap(): void {
    const found: RegisteredToolSource[] = [];
    const contributions = collectExtensions<ToolSourceMeta, ToolSourceProvider>(this.discovery, {
      name: 'tool source',
      metadataKey: ToolSource.key,
      key: (meta) => meta.name,
      validate: (meta, provider) => (typeof provider.listTools !== 'function' ? 'tool source has no listTools()' : !TOOL_SOURCE_KINDS.includes(meta.source) ? 'tool source declares an unknown source kind' : undefined),
      invalid: 'skip',
      onSkip: (problem, { meta }) => this.log.error({ msg: `${problem}; ignored`, source: meta.name, ...(TOOL_SOURCE_KINDS.includes(meta.source) ? {} : { kind: meta.source }) }),
    });
    for (const { meta, provider } of contributions) {
      found.push({
        name: meta.name,
        kind: meta.source,
        provider,
        ttlMs: meta.cacheTtlMs ?? this.settings.cacheTtlMs,
        hostWide: meta.hostWide ?? false,
      });
    }
    this.sources = found.sort((a, b) => compareToolIds(a.name, b.name));
    for (const s of this.sources) {
      s.provider.subscribe?.((scope) => this.invalidate(s.name, scope));
    }
    this.log.log({ msg: 'tool sources registered', sources: this.sources.map((s) => `${s.name} (${s.kind})`) });
  }

  registeredSources(): readonly RegisteredToolSource[] {
    return this.sources;
  }

  /** Source kinds that currently project something (what discovery advertises). */
  async projectingKinds(): Promise<ToolSourceKind[]> {
    const kinds = new Set<ToolSourceKind>();
    for (const s of this.sources) {
      if (kinds.has(s.kind)) continue;
      try {
        if (!s.provider.projects || (await s.provider.projects())) kinds.add(s.kind);
      } catch (e) {
        this.log.warn({ msg: 'tool source failed to say whether it projects', source: s.name, err: (e as Error).message });
      }
    }
    return TOOL_SOURCE_KINDS.filter((k) => kinds.has(k));
  }

  /**
   * Drops cached listings of one source (or all) for one scope (or all). A scope without a
   * workspace covers every workspace of its tenant (tenant-level artifacts are visible in each).
   */
  invalidate(sourceName?: string, scope?: ToolListingScope): void {
    this.generation++;
    const covers = (sk: string) => {
      if (!scope || sk === HOST_WIDE_KEY) return true;
      const [tenant, workspace] = sk.split('\u0000');
      return tenant === scope.tenant && (!scope.workspace || workspace === scope.workspace);
    };
    for (const key of [...this.listings.keys()]) {
      const [name, sk] = key.split('\u0001');
      if ((!sourceName || name === sourceName) && covers(sk)) this.listings.delete(key);
    }
    const hostWide = this.sources.some((s) => s.hostWide && (!sourceName || s.name === sourceName));
    for (const sk of [...this.snapshots.keys()]) if (hostWide || covers(sk)) this.snapshots.delete(sk);
  }

  /** The descriptors a principal may see, sorted by toolId. */
  async list(principal: Principal, opts: ListOptions = {}): Promise<ToolDescriptor[]> {
    const snap = await this.snapshot(principal);
    return snap.entries
      .filter((e) => (!opts.source || e.descriptor.source === opts.source) && visibleTo(e.descriptor, principal.scopes))
      .map((e) => e.descriptor);
  }

  /**
   * The response body of `GET /v1/tools` (and `GET /tools` at major 2) as JSON text: a bare array
   * (standard view) or `{tools: [...]}` (compact view). Serialized once per snapshot, major and
   * distinct view.
   */
  async listJson(principal: Principal, opts: ListOptions = {}): Promise<SerializedCatalog> {
    const snap = await this.snapshot(principal);
    const held = snap.relevantScopes.filter((s) => principal.scopes.has(s)).join(' ');
    const v2 = (opts.major ?? 1) >= 2;
    const key = `${opts.view ?? 'standard'}|${v2 ? 2 : 1}|${opts.source ?? ''}|${held}`;
    let serialized = snap.bodies.get(key);
    if (serialized === undefined) {
      const visible = snap.entries
        .filter((e) => (!opts.source || e.descriptor.source === opts.source) && visibleTo(e.descriptor, principal.scopes))
        .map((e) => e.descriptor);
      // Encoded once: every response then writes the same bytes without re-serializing or copying.
      // The compact view is the same at both majors (no annotations); the standard view gains them at major 2.
      const standard = v2 ? visible.map(toV2Descriptor) : visible;
      const body = Buffer.from(opts.view === 'compact' ? JSON.stringify({ tools: visible.map(toCompact) }) : JSON.stringify(standard), 'utf8');
      serialized = { body, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"` };
      if (snap.bodies.size >= MAX_BODIES_PER_SNAPSHOT) snap.bodies.delete(snap.bodies.keys().next().value as string);
      snap.bodies.set(key, serialized);
    }
    return serialized;
  }

  /** One tool the principal may see; unknown and hidden ids are the same 404. */
  async get(principal: Principal, toolId: string): Promise<ToolDescriptor> {
    return (await this.entry(principal, toolId)).descriptor;
  }

  async getCompact(principal: Principal, toolId: string): Promise<CompactToolDescriptor> {
    return toCompact(await this.get(principal, toolId));
  }

  /** The catalog entry (descriptor and its source) of a tool the principal may see, or 404. */
  async entry(principal: Principal, toolId: string): Promise<CatalogEntry> {
    const snap = await this.snapshot(principal);
    const e = snap.byId.get(toolId);
    if (!e || !visibleTo(e.descriptor, principal.scopes)) throw new NotFoundError('No such tool.');
    return e;
  }

  /** Whether a tool can be called in a session: its source opens sessions (a `workflow` tool runs as a child run instead). */
  invocable(entry: CatalogEntry): boolean {
    return !!entry.source.provider.openSession;
  }

  /**
   * A session on a tool the principal may see, acting as that principal: the one way a catalog tool
   * is called (core.tool nodes, which the tool-session seam and the MCP mount run). `tool` is its id
   * (unknown and hidden ids are the same 404) or the entry the caller already read with `entry`, so
   * the catalog is not asked twice. 422 `tool_not_invocable` when its source opens no sessions.
   */
  async open(principal: Principal, tool: string | CatalogEntry, signal: AbortSignal): Promise<ToolSession> {
    const entry = typeof tool === 'string' ? await this.entry(principal, tool) : tool;
    const provider = entry.source.provider;
    if (!provider.openSession) throw new UnprocessableError('tool_not_invocable', 'The source of this tool does not support invocation.', { toolId: entry.descriptor.toolId });
    return provider.openSession(entry.descriptor.toolId, { tenant: principal.tenant, workspace: principal.workspace, principal: principal.principal, scopes: principal.scopes, signal });
  }

  /** Loads the scope's catalog (its sources' listings) unless it is loaded and current. */
  async load(scope: TenantScope): Promise<void> {
    await this.snapshot(scope);
  }

  /**
   * The descriptor of a tool of a scope whether or not a given principal may see it: only for
   * working out which scopes delegated work needs (never served to a caller).
   */
  async descriptorOf(scope: TenantScope, toolId: string): Promise<ToolDescriptor | undefined> {
    return (await this.snapshot(scope)).byId.get(toolId)?.descriptor;
  }

  /** Entries a principal may see, with their sources (for the session runner's default pick). */
  async entries(principal: Principal): Promise<CatalogEntry[]> {
    const snap = await this.snapshot(principal);
    return snap.entries.filter((e) => visibleTo(e.descriptor, principal.scopes));
  }

  private async snapshot(scope: TenantScope): Promise<Snapshot> {
    const key = scopeKey(scope);
    const cached = this.snapshots.get(key);
    if (cached && cached.expiresAt > this.clock.now()) return cached;
    let pending = this.snapshotsInFlight.get(key);
    if (!pending) {
      pending = this.buildSnapshot({ tenant: scope.tenant, workspace: scope.workspace }, key).finally(() => this.snapshotsInFlight.delete(key));
      this.snapshotsInFlight.set(key, pending);
    }
    return pending;
  }

  private async buildSnapshot(scope: ToolListingScope, key: string): Promise<Snapshot> {
    const generation = this.generation;
    const listings = await Promise.all(this.sources.map((s) => this.listing(s, scope)));
    const expiresAt = Math.min(...listings.map((l) => l.expiresAt), Number.POSITIVE_INFINITY);
    const previous = this.snapshots.get(key);
    if (previous && previous.parts.length === listings.length && listings.every((l, i) => l.entries === previous.parts[i])) {
      // Every source re-listed the same tools: keep the snapshot and its serialized bodies.
      previous.expiresAt = expiresAt;
      return previous;
    }
    const byId = new Map<string, CatalogEntry>();
    const claimedBy = new Map<string, string[]>();
    for (const listing of listings) {
      for (const e of listing.entries) {
        const owners = claimedBy.get(e.descriptor.toolId);
        if (owners) owners.push(e.source.name);
        else {
          claimedBy.set(e.descriptor.toolId, [e.source.name]);
          byId.set(e.descriptor.toolId, e);
        }
      }
    }
    const collisions: Array<{ toolId: string; sources: string[] }> = [];
    for (const [toolId, owners] of claimedBy) {
      if (owners.length < 2) continue;
      // Which claim is genuine cannot be known: serve neither, and say so loudly.
      byId.delete(toolId);
      collisions.push({ toolId, sources: owners });
      this.log.error({ msg: 'toolId collision: the tool is left out of the catalog until one source drops it', toolId, sources: owners, tenant: scope.tenant });
    }
    this.reportCollisions(key, collisions);
    const entries = [...byId.values()].sort((a, b) => compareToolIds(a.descriptor.toolId, b.descriptor.toolId));
    const relevant = new Set<string>();
    for (const e of entries) for (const s of e.descriptor.auth?.scopes ?? []) relevant.add(s);
    const snap: Snapshot = {
      entries,
      parts: listings.map((l) => l.entries),
      byId,
      relevantScopes: [...relevant].sort(),
      expiresAt,
      bodies: new Map(),
    };
    if (generation === this.generation) this.snapshots.set(key, snap);
    return snap;
  }

  private reportCollisions(key: string, found: Array<{ toolId: string; sources: string[] }>): void {
    if (found.length) this.collisions.set(key, found);
    else this.collisions.delete(key);
    const all = [...this.collisions.values()].flat();
    if (!all.length) {
      this.health.report('tool-catalog', true);
      return;
    }
    const first = all[0];
    this.health.report(
      'tool-catalog',
      false,
      `toolId collision: "${first.toolId}" is claimed by ${first.sources.join(' and ')}${all.length > 1 ? ` (and ${all.length - 1} more)` : ''}`,
      { collisions: all.slice(0, 50) },
    );
  }

  private async listing(source: RegisteredToolSource, scope: ToolListingScope): Promise<Listing> {
    const key = listingKey(source, scope);
    const cached = this.listings.get(key);
    if (cached && cached.expiresAt > this.clock.now()) return cached;
    let pending = this.listingsInFlight.get(key);
    if (!pending) {
      const generation = this.generation;
      pending = this.fetchListing(source, scope)
        .then((listing) => {
          const prev = this.listings.get(key);
          if (prev && prev.entries.length === listing.entries.length && listing.entries.every((e, i) => e === prev.entries[i])) {
            listing.entries = prev.entries; // unchanged: same array, so snapshots built on it stay valid
          }
          if (generation === this.generation) this.listings.set(key, listing);
          return listing;
        })
        .finally(() => this.listingsInFlight.delete(key));
      this.listingsInFlight.set(key, pending);
    }
    return pending;
  }

  private async fetchListing(source: RegisteredToolSource, scope: ToolListingScope): Promise<Listing> {
    const started = this.clock.now();
    const controller = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    try {
      const deadline = new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          controller.abort();
          reject(new SourceTimeoutError(`did not answer within ${this.settings.sourceTimeoutMs} ms`));
        }, this.settings.sourceTimeoutMs);
      });
      const listed = await Promise.race([
        Promise.resolve().then(() => source.provider.listTools({ tenant: scope.tenant, workspace: scope.workspace, signal: controller.signal })),
        deadline,
      ]);
      if (!Array.isArray(listed)) throw new ExtensionFault('listTools() did not return an array');
      const entries: CatalogEntry[] = [];
      for (const d of listed) {
        const known = d && typeof d === 'object' ? this.validated.get(d) : undefined;
        if (known && known.source === source) {
          entries.push(known);
          continue;
        }
        const problems = descriptorProblems(d, source.kind);
        if (problems.length) {
          this.log.warn({
            msg: 'tool descriptor fails validation; left out of the catalog',
            source: source.name,
            toolId: d && typeof d === 'object' ? (d as { toolId?: unknown }).toolId : undefined,
            problems: problems.slice(0, 5),
          });
          continue;
        }
        const entry = { descriptor: deepFreeze(structuredClone(d)), source };
        this.validated.set(d, entry);
        entries.push(entry);
      }
      this.health.report(`tool-source:${source.name}`, true);
      return { entries, expiresAt: started + source.ttlMs };
    } catch (e) {
      const reason = e instanceof SourceTimeoutError ? e.message : `failed: ${(e as Error)?.message ?? String(e)}`;
      this.log.error({ msg: 'tool source left out of the catalog', source: source.name, tenant: scope.tenant, reason });
      this.health.report(`tool-source:${source.name}`, false, `tool source ${source.name} ${reason}; its tools are left out`, {
        source: source.name,
        kind: source.kind,
      });
      return { entries: [], expiresAt: this.clock.now() + Math.min(source.ttlMs, FAILURE_BACKOFF_MS) };
    } finally {
      clearTimeout(timer);
    }
  }
}

const HOST_WIDE_KEY = '*';

function scopeKey(scope: TenantScope): string {
  return `${scope.tenant}\u0000${scope.workspace ?? ''}`;
}

function listingKey(source: RegisteredToolSource, scope: ToolListingScope): string {
  return `${source.name}\u0001${source.hostWide ? HOST_WIDE_KEY : scopeKey(scope)}`;
}

function deepFreeze<T>(v: T): T {
  if (v && typeof v === 'object') {
    Object.freeze(v);
    for (const x of Object.values(v as Record<string, unknown>)) deepFreeze(x);
  }
  return v;
}
