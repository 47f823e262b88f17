import { randomUUID } from 'node:crypto';
import { Inject, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import { ArtifactLocation, ArtifactStore, ArtifactStoreProvider, NodeArtifacts, NodeExecutionError, RunArtifactInput, RunArtifactRef } from '@openwop-host/plugin-sdk';
import { DataSource } from 'typeorm';
import { HOST_CONFIG, HostConfig } from '../../../platform/config/host-config';
import { collectExtensions, ExtensionMeta, ExtensionPointError } from '../../../platform/plugins/extension-registry';
import { RetentionService, RunPurger } from '../../../platform/retention/retention.service';
import { DATABASE_ARTIFACT_STORE } from './database-artifact-store';
import { RunArtifactEntity } from './run-artifact.entity';

/** A media type `type/subtype` with optional parameters, no control characters (it becomes a header). */
const CONTENT_TYPE = /^[a-zA-Z0-9][a-zA-Z0-9!#$&^_.+-]{0,126}\/[a-zA-Z0-9][a-zA-Z0-9!#$&^_.+-]{0,126}(\s*;\s*[a-zA-Z0-9!#$&^_.+-]+=("[^"\r\n]*"|[a-zA-Z0-9!#$&^_.+-]+))*$/;

export interface StoredArtifact {
  ref: RunArtifactRef;
  data: Buffer;
}

function refOf(row: RunArtifactEntity): RunArtifactRef {
  return { artifactId: row.id, name: row.name, contentType: row.contentType, sizeBytes: Number(row.sizeBytes), nodeId: row.nodeId, createdAt: row.createdAt.toISOString() };
}

/** The bytes and default media type of `put`'s data. */
function encode(data: RunArtifactInput['data']): { bytes: Buffer; contentType: string } {
  if (typeof data === 'string') return { bytes: Buffer.from(data, 'utf8'), contentType: 'text/plain; charset=utf-8' };
  if (data instanceof Uint8Array) return { bytes: Buffer.from(data.buffer, data.byteOffset, data.byteLength), contentType: 'application/octet-stream' };
  if (data !== null && typeof data === 'object') return { bytes: Buffer.from(JSON.stringify(data), 'utf8'), contentType: 'application/json' };
  throw new NodeExecutionError('artifact_invalid', 'artifacts.put: data must be bytes, a string, or a JSON object or array.');
}

/**
 * Run artifacts: `ctx.artifacts.put` for the run engine, the snapshot's `artifacts` list and the
 * bytes the artifact route serves. The metadata row is always in the database (authorization,
 * listing, retention); the bytes go to the artifact store: the database store unless exactly one
 * plugin contributes an `@ArtifactStore` (two plugin stores stop the start).
 */
@Injectable()
export class RunArtifactsService implements OnApplicationBootstrap {
  private readonly log = new Logger('runs.artifacts');
  private storeId = DATABASE_ARTIFACT_STORE;
  private readonly stores = new Map<string, ArtifactStoreProvider>();
  readonly maxBytes: number;

  constructor(
    private readonly ds: DataSource,
    private readonly discovery: DiscoveryService,
    @Inject(HOST_CONFIG) config: HostConfig,
    private readonly retention: RetentionService,
  ) {
    this.maxBytes = config.artifacts.maxBytes;
  }

  onApplicationBootstrap(): void {
    const found = collectExtensions<ExtensionMeta<typeof ArtifactStore>, ArtifactStoreProvider>(this.discovery, {
      name: 'artifact store',
      metadataKey: ArtifactStore.key,
      key: (meta) => meta.id,
      validate: (meta, p) => (typeof meta?.id !== 'string' || !meta.id || typeof p.put !== 'function' || typeof p.get !== 'function' ? 'artifact store without an id, put() or get()' : undefined),
    });
    for (const c of found) this.stores.set(c.key, c.provider);
    const plugins = found.filter((c) => c.key !== DATABASE_ARTIFACT_STORE);
    if (plugins.length > 1) throw new ExtensionPointError(`two artifact stores replace the database store: ${plugins.map((c) => `${c.key} (${c.providerName})`).join(' and ')}`);
    this.storeId = plugins[0]?.key ?? DATABASE_ARTIFACT_STORE;
    this.retention.registerRunPurger(this.purger());
  }

  /**
   * Retention: deletes the artifacts of deleted runs (relation `runs`: "tenant", "id"; a part of its batch
   * statement), answering for after the commit the ones a plugin store holds, whose objects it deletes then.
   */
  private purger(): RunPurger {
    return {
      counts: 'artifacts',
      deletes: (runs) =>
        `DELETE FROM "run_artifact" a USING ${runs} d WHERE a."tenant" = d."tenant" AND a."run_id" = d."id"
         RETURNING a."id", a."tenant", a."workspace", a."run_id", a."store", a."store_ref"`,
      afterCommit: {
        rows: `CASE WHEN "store" <> '${DATABASE_ARTIFACT_STORE.replace(/'/g, "''")}' AND "store_ref" IS NOT NULL THEN json_build_object('id', "id", 'tenant', "tenant", 'workspace', "workspace", 'runId', "run_id", 'store', "store", 'storeRef', "store_ref") END`,
        run: async (rows) => {
          for (const r of rows as Array<{ id: string; tenant: string; workspace: string | null; runId: string; store: string; storeRef: string }>) {
            const store = this.stores.get(r.store);
            if (!store?.delete) continue;
            await store.delete({ tenant: r.tenant, workspace: r.workspace ?? undefined, runId: r.runId, artifactId: r.id }, r.storeRef).catch((e: unknown) => this.log.warn({ msg: 'artifact store delete failed', store: r.store, artifactId: r.id, error: (e as Error)?.message ?? String(e) }));
          }
        },
      },
    };
  }

  /** The id of the store new artifacts go to. */
  get activeStore(): string {
    return this.storeId;
  }

  /** `ctx.artifacts` of one node execution; `emit` appends `artifact.created` to the run's log. */
  forNode(scope: { tenant: string; workspace?: string }, runId: string, nodeId: string, emit: (type: string, payload: Record<string, unknown>) => Promise<unknown>): NodeArtifacts {
    return { put: (input) => this.put(scope, runId, nodeId, input, emit) };
  }

  private async put(scope: { tenant: string; workspace?: string }, runId: string, nodeId: string, input: RunArtifactInput, emit: (type: string, payload: Record<string, unknown>) => Promise<unknown>): Promise<RunArtifactRef> {
    if (!input || typeof input.name !== 'string' || !input.name.trim() || input.name.length > 255 || /[\u0000-\u001f]/.test(input.name)) {
      throw new NodeExecutionError('artifact_invalid', 'artifacts.put: name must be 1-255 characters without control characters.');
    }
    const { bytes, contentType: dflt } = encode(input.data);
    const contentType = input.contentType ?? dflt;
    if (typeof contentType !== 'string' || contentType.length > 255 || !CONTENT_TYPE.test(contentType)) throw new NodeExecutionError('artifact_invalid', `artifacts.put: ${JSON.stringify(contentType)} is not a media type.`);
    if (bytes.byteLength > this.maxBytes) {
      throw new NodeExecutionError('artifact_too_large', `The artifact ${JSON.stringify(input.name)} is ${bytes.byteLength} bytes; the host stores at most ${this.maxBytes} (OPENWOP_ARTIFACT_MAX_BYTES).`);
    }
    if (input.metadata !== undefined && (input.metadata === null || typeof input.metadata !== 'object' || Array.isArray(input.metadata))) throw new NodeExecutionError('artifact_invalid', 'artifacts.put: metadata must be a JSON object.');
    const id = randomUUID();
    const location: ArtifactLocation = { tenant: scope.tenant, workspace: scope.workspace, runId, artifactId: id };
    const store = this.stores.get(this.storeId) as ArtifactStoreProvider;
    const row = await this.ds.transaction(async (m) => {
      const repo = m.getRepository(RunArtifactEntity);
      await m.query(
        `INSERT INTO "run_artifact" ("id", "tenant", "workspace", "run_id", "node_id", "name", "content_type", "size_bytes", "store", "metadata") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
        [id, scope.tenant, scope.workspace ?? null, runId, nodeId, input.name, contentType, bytes.byteLength, this.storeId, input.metadata === undefined ? null : JSON.stringify(input.metadata)],
      );
      const { ref } = await store.put(location, { contentType, data: bytes }, m).catch((e: unknown) => {
        throw new NodeExecutionError('artifact_store_failed', `The artifact store ${this.storeId} did not store ${JSON.stringify(input.name)}: ${(e as Error)?.message ?? String(e)}`);
      });
      if (typeof ref !== 'string' || !ref) throw new NodeExecutionError('artifact_store_failed', `The artifact store ${this.storeId} answered no ref.`);
      await repo.update({ id, tenant: scope.tenant }, { storeRef: ref });
      return repo.findOneByOrFail({ id, tenant: scope.tenant });
    });
    const ref = refOf(row);
    const payload: Record<string, unknown> = { artifactId: id, artifactType: input.artifactType ?? 'file', nodeId, registered: false, name: ref.name, contentType, sizeBytes: ref.sizeBytes };
    if (typeof input.summary === 'string' && input.summary) payload.summary = input.summary;
    await emit('artifact.created', payload);
    return ref;
  }

  /** The artifacts of a run the caller already may see, oldest first. */
  async list(tenant: string, runId: string): Promise<RunArtifactRef[]> {
    const rows = await this.ds.getRepository(RunArtifactEntity).find({ where: { tenant, runId }, order: { createdAt: 'ASC', id: 'ASC' } });
    return rows.map(refOf);
  }

  /** One artifact of a run the caller already may see, with its bytes; undefined when unknown. */
  async read(tenant: string, runId: string, artifactId: string): Promise<StoredArtifact | undefined> {
    if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(artifactId)) return undefined;
    const row = await this.ds.getRepository(RunArtifactEntity).findOneBy({ id: artifactId, tenant, runId });
    if (!row) return undefined;
    const store = this.stores.get(row.store);
    if (!store || row.storeRef === null) return undefined;
    const data = await store.get({ tenant, workspace: row.workspace ?? undefined, runId, artifactId }, row.storeRef);
    return data ? { ref: refOf(row), data: Buffer.isBuffer(data) ? data : Buffer.from(data) } : undefined;
  }
}
