import { defineExtensionPoint } from './extension-point';

/** The closed vocabulary of catalog sources (RFC 0078 `ToolDescriptor.source`). */
export type ToolSourceKind = 'node-pack' | 'workflow' | 'mcp' | 'connector' | 'host-extension';

export const TOOL_SOURCE_KINDS: readonly ToolSourceKind[] = ['node-pack', 'workflow', 'mcp', 'connector', 'host-extension'];

export type ToolSafetyTier = 'pure' | 'read' | 'write' | 'exec';
export type ToolEgress = 'none' | 'safe-fetch' | 'host-mediated' | 'host-owned';
export type ToolApproval = 'never' | 'conditional' | 'always';
export type ToolReplayPolicy = 'deterministic' | 'idempotent' | 'non-deterministic';
export type ToolHint = 'low' | 'medium' | 'high';

/** A JSON Schema (draft 2020-12) object. */
export type JsonSchemaObject = Record<string, unknown>;

/**
 * One catalog entry, exactly the v1 `tool-descriptor.schema.json` shape (closed: no other keys).
 * `safetyTier: "exec"` is allowed only with `source: "host-extension"`. `auth` carries requirement
 * flags only, never credential material.
 */
export interface ToolDescriptor {
  toolId: string;
  source: ToolSourceKind;
  title?: string;
  description?: string;
  inputSchema?: JsonSchemaObject;
  outputSchema?: JsonSchemaObject;
  auth?: { scopes?: string[]; credentialRef?: boolean };
  egress?: ToolEgress;
  approval?: ToolApproval;
  replayPolicy?: ToolReplayPolicy;
  safetyTier: ToolSafetyTier;
  costHint?: ToolHint;
  latencyHint?: ToolHint;
}

/** Whose catalog is being listed: the tenant (and workspace) of the calling principal. */
export interface ToolListingScope {
  tenant: string;
  workspace?: string;
}

export interface ToolListingContext extends ToolListingScope {
  /** Aborted when the catalog's deadline for this source passes; stop work and reject. */
  signal: AbortSignal;
}

/** The principal invoking a tool (through a session). */
export interface ToolInvocationContext extends ToolListingScope {
  principal: string;
  scopes: ReadonlySet<string>;
  signal: AbortSignal;
}

/**
 * The result of one call. Content is handed back to the internal caller only: the host never
 * writes it into events, logs or the catalog.
 */
export interface ToolCallResult {
  status: 'ok' | 'error';
  content?: unknown;
  error?: { code: string; message: string };
  /**
   * What this call cost in USD, when the source knows (RFC 0084 cost reporting). A run that calls
   * the tool sums it against its `maxCostUsd` bound, whether the call succeeded or failed.
   */
  costUsd?: number;
}

/** A (possibly stateful) interaction with one tool: e.g. one MCP client connection. */
export interface ToolSession {
  call(args: Record<string, unknown>, signal: AbortSignal): Promise<ToolCallResult>;
  close(): Promise<void>;
}

/**
 * A tool source: contributes descriptors to the catalog and, optionally, invokes them.
 *
 * Contract:
 * - `listTools` returns every descriptor the scope's tenant/workspace may see. The catalog caches
 *   the result per replica and per scope for the source's `cacheTtlMs`, validates each descriptor
 *   against the v1 schema (invalid ones are logged and left out), filters per principal by
 *   `auth.scopes`, and sorts. A source that throws or misses the deadline loses only its own tools
 *   and marks the host degraded.
 * - Descriptors must be deterministic: the same toolId for the same tool on every read. They are
 *   treated as immutable: hand back the same object for an unchanged tool (the catalog then skips
 *   re-validating it and keeps its serialized responses) and a new object when the tool changes.
 * - `subscribe` (optional) lets the source tell the catalog its listing changed (all scopes when
 *   `scope` is undefined), so cached listings are dropped before their TTL.
 * - `openSession` (optional) makes the source's tools invocable through the host's internal
 *   tool-session path. The catalog itself is never an invocation path.
 */
export interface ToolSourceProvider {
  listTools(ctx: ToolListingContext): Promise<ToolDescriptor[]>;
  subscribe?(onChange: (scope?: ToolListingScope) => void): void;
  openSession?(toolId: string, ctx: ToolInvocationContext): Promise<ToolSession>;
  /**
   * Arguments a smoke session (the host's session self-test / conformance seam) may call this tool
   * with. A source that returns undefined for a tool is never picked for a smoke session.
   */
  sampleArguments?(toolId: string): Record<string, unknown> | undefined;
  /**
   * Whether the source projects anything at all right now (for any tenant). The catalog advertises
   * a source kind in discovery only while one of its providers does. Absent: always.
   */
  projects?(): boolean | Promise<boolean>;
}

export interface ToolSourceMeta {
  /** The `source` every descriptor of this provider carries. */
  source: ToolSourceKind;
  /** A unique name of the provider (logs, health, collisions), e.g. `acme.openapi-tools`. */
  name: string;
  /** How long a listing stays cached per scope (default: the catalog's `tools.cacheTtlMs`). */
  cacheTtlMs?: number;
  /** Listing is the same for every tenant: cached once per replica instead of per scope. */
  hostWide?: boolean;
}

/** Marks a provider as a tool source: `@ToolSource({ source: 'mcp', name: 'acme.mcp' })`. */
export const ToolSource = defineExtensionPoint<ToolSourceMeta>('tool-source');
