import { Injectable } from '@nestjs/common';
import { ArtifactLocation, ArtifactStore, ArtifactStoreProvider } from '@openwop-host/plugin-sdk';
import { DataSource, EntityManager } from 'typeorm';

/** The id of the host's own artifact store. */
export const DATABASE_ARTIFACT_STORE = 'database';

/**
 * The default artifact store: the bytes in the artifact's own row (`run_artifact.content`), written
 * in the transaction that records the artifact, so an artifact is listed exactly when its bytes
 * are there. A plugin `@ArtifactStore` replaces it.
 */
@Injectable()
@ArtifactStore({ id: DATABASE_ARTIFACT_STORE })
export class DatabaseArtifactStore implements ArtifactStoreProvider {
  constructor(private readonly ds: DataSource) {}

  async put(location: ArtifactLocation, object: { contentType: string; data: Buffer }, tx?: unknown): Promise<{ ref: string }> {
    const m = (tx as EntityManager | undefined) ?? this.ds.manager;
    await m.query(`UPDATE "run_artifact" SET "content" = $1 WHERE "id" = $2 AND "tenant" = $3`, [object.data, location.artifactId, location.tenant]);
    return { ref: location.artifactId };
  }

  async get(location: ArtifactLocation): Promise<Buffer | undefined> {
    const rows = (await this.ds.query(`SELECT "content" FROM "run_artifact" WHERE "id" = $1 AND "tenant" = $2`, [location.artifactId, location.tenant])) as Array<{ content: Buffer | null }>;
    return rows[0]?.content ?? undefined;
  }
}
