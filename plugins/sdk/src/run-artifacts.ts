import { defineExtensionPoint } from './extension-point';

/**
 * Run artifacts (since 1.5): files a node produces while it runs (a report, a rendered document, a
 * JSON result too large or too binary for its outputs). A node executor writes one with
 * `ctx.artifacts.put(...)`; the host stores its bytes (in its database by default, or in the object
 * store a plugin contributes through `@ArtifactStore`), appends `artifact.created` to the run's
 * event log, lists it on the run snapshot (`artifacts`) and serves it at
 * `GET /v1/runs/{runId}/artifacts/{artifactId}` to callers holding `artifacts:read`. Artifacts are
 * deleted with their run (retention).
 */
export interface RunArtifactInput {
  /** A name for people and downloads, e.g. `report.md` (1-255 characters). */
  name: string;
  /** The media type served with the bytes, e.g. `text/markdown` (default: `application/json` for an object or array, `text/plain; charset=utf-8` for a string, `application/octet-stream` for bytes). */
  contentType?: string;
  /** The content: bytes, a string (stored as UTF-8) or a JSON value (stored as its JSON text). */
  data: Uint8Array | string | Record<string, unknown> | unknown[];
  /** Small JSON facts about the artifact, kept with it (not served with the bytes). */
  metadata?: Record<string, unknown>;
  /** The `artifactType` of the `artifact.created` event (default `file`). */
  artifactType?: string;
  /** A one-line `summary` for the `artifact.created` event. */
  summary?: string;
}

/** A stored artifact, as the run snapshot lists it. */
export interface RunArtifactRef {
  artifactId: string;
  name: string;
  contentType: string;
  sizeBytes: number;
  nodeId: string;
  createdAt: string;
}

/**
 * `NodeExecutionContext.artifacts`. `put` rejects with a `NodeExecutionError` code
 * `artifact_too_large` when the content exceeds the host's cap (OPENWOP_ARTIFACT_MAX_BYTES), and
 * `artifact_invalid` for a missing name or a bad content type; left uncaught, the node fails with it.
 */
export interface NodeArtifacts {
  put(input: RunArtifactInput): Promise<RunArtifactRef>;
}

/** Where an artifact belongs, handed to an artifact store. */
export interface ArtifactLocation {
  tenant: string;
  workspace?: string;
  runId: string;
  artifactId: string;
}

/**
 * Artifact store extension point: where the bytes of run artifacts live. The host's own store keeps
 * them in its database (`database`); a plugin that contributes one `@ArtifactStore({ id })`
 * provider replaces it (two plugin stores stop the start). The host keeps every artifact's
 * metadata (name, type, size, node, tenant and workspace) in its database either way and checks
 * authorization before it asks the store: a store only ever sees locations the host resolved.
 */
export interface ArtifactStoreProvider {
  /**
   * Stores the bytes; answers the reference the host keeps and hands back to `get`/`delete`
   * (e.g. an object key). `tx` is the host's transaction that records the artifact (opaque; the
   * database store writes in it, others ignore it).
   */
  put(location: ArtifactLocation, object: { contentType: string; data: Buffer }, tx?: unknown): Promise<{ ref: string }>;
  /** The bytes stored under `ref`, or undefined when they are gone. */
  get(location: ArtifactLocation, ref: string): Promise<Buffer | undefined>;
  /** Optional: deletes the bytes (called when an artifact's run is deleted). */
  delete?(location: ArtifactLocation, ref: string): Promise<void>;
}

export const ArtifactStore = defineExtensionPoint<{ id: string }>('artifact-store');
