/**
 * `ctx.workspace` (RFC 0059 §D): the run's agent workspace (the tenant·workspace file store of
 * `/v1/host/workspace/files`) as it was when the run started. The snapshot is immutable for the
 * run's duration: a write made meanwhile (by anyone, this run's own nodes included, through the
 * HTTP `PUT`) is seen by later runs, not by this one; a run resumed on another replica, and a
 * replay or fork of the run, read the same snapshot. Present when the host advertises
 * `capabilities.workspace.supported`.
 *
 * A path is the store's (`[A-Za-z0-9][A-Za-z0-9._/-]{0,255}`, no `..`, no empty segment); another
 * fails the call with a `NodeExecutionError` of code `invalid_arguments`. When the host no longer
 * holds a version the snapshot needs (the store keeps the newest `maxVersions` of each file), the
 * call fails with code `workspace_snapshot_unavailable` rather than answer other content.
 */
export interface NodeWorkspaceFile {
  path: string;
  content: string;
  contentType: string;
  /** The file's version as of the snapshot; `etag` is its strong entity tag, as the HTTP API answers it. */
  version: number;
  etag: string;
  /** When that version was written (RFC 3339). */
  updatedAt: string;
}

/** A file's metadata, as `list` answers it (`NodeWorkspaceFile` without `content`). */
export type NodeWorkspaceFileMeta = Omit<NodeWorkspaceFile, 'content'>;

/** `NodeExecutionContext.workspace`. */
export interface NodeWorkspace {
  /** The file at `path` as of the run's start, or `null` when there was none then. */
  get(path: string): Promise<NodeWorkspaceFile | null>;
  /** The files as of the run's start (those whose path starts with `prefix`, when given), by path. */
  list(prefix?: string): Promise<NodeWorkspaceFileMeta[]>;
}
