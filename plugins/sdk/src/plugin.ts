import type { DynamicModule, Type } from '@nestjs/common';

/** The SDK's own version; plugins compile against it and the host checks `hostRange`. */
export const PLUGIN_API_VERSION = '1.8.0';

export const PLUGIN_BRAND = 'openwop-host.plugin' as const;

/** Logging the host gives a plugin (structured; never log credential values). */
export interface PluginLogger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

/** A per-tenant key-value store owned by the plugin (the host keeps it in its database). */
export interface PluginKeyValueStore {
  get<T = unknown>(tenant: string, key: string): Promise<T | undefined>;
  set(tenant: string, key: string, value: unknown): Promise<void>;
  delete(tenant: string, key: string): Promise<void>;
}

/** An HTTP client with a deadline on every request. */
export interface PluginHttpClient {
  fetch(url: string, init?: RequestInit & { timeoutMs?: number }): Promise<Response>;
}

/** What the host hands a plugin: curated services, never the raw database. */
export interface PluginContext<C = Record<string, unknown>> {
  id: string;
  /** The plugin's options from OPENWOP_CONFIG `plugins.<id>`, validated against its configSchema. */
  config: C;
  logger: PluginLogger;
  http: PluginHttpClient;
  kv: PluginKeyValueStore;
}

/** Injection token of the PluginContext inside a plugin's module. */
export const PLUGIN_CONTEXT = 'openwop-host:plugin-context';

export interface PluginDefinition<C = Record<string, unknown>> {
  /** Unique id, e.g. `acme.jira-tools`. */
  id: string;
  version: string;
  /** The SemVer range of the plugin SDK/host API the plugin supports, e.g. `^1.0.0`. */
  hostRange: string;
  description?: string;
  /** JSON Schema (draft 2020-12) of the plugin's options. */
  configSchema?: Record<string, unknown>;
  /** The Nest module the plugin contributes, or a factory given the plugin context. */
  module: Type<unknown> | DynamicModule | ((ctx: PluginContext<C>) => Type<unknown> | DynamicModule);
}

export interface BrandedPlugin<C = Record<string, unknown>> extends PluginDefinition<C> {
  readonly $$type: typeof PLUGIN_BRAND;
  readonly apiVersion: string;
}

/** Declares a host plugin. The package's main export (default or `plugin`) is this object. */
export function definePlugin<C = Record<string, unknown>>(def: PluginDefinition<C>): BrandedPlugin<C> {
  return Object.freeze({ ...def, $$type: PLUGIN_BRAND, apiVersion: PLUGIN_API_VERSION });
}

export function isPlugin(v: unknown): v is BrandedPlugin {
  return !!v && typeof v === 'object' && (v as { $$type?: unknown }).$$type === PLUGIN_BRAND;
}
